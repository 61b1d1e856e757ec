#pragma once
// SIGINT/SIGTERM/SIGHUP restore every live PowerLimitGuard, then the process exits 128+signo.
//
// Async-signal-safety by the self-pipe method: the handler only write()s the signal number to a
// pipe (async-signal-safe); a dedicated watcher thread reads it and does the real work (NVML calls,
// journal update, locks), which must never run inside a handler. A self-pipe rather than blocking
// the signals and sigwait()ing: a blocked mask is inherited by the workload processes Regime
// starts, while handlers are reset to default by exec.
namespace regime {

class PowerLimitGuard;

// The first live guard installs the handlers (the watcher thread is started once per process);
// the last one to go puts back the dispositions it found, so a process outlives its guards with
// its own signal handling intact. Thread-safe.
void register_live_guard(PowerLimitGuard* guard);
void unregister_live_guard(PowerLimitGuard* guard);

}  // namespace regime
