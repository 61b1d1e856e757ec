#pragma once
// Every catchable signal whose default action ends the process restores every live
// PowerLimitGuard first:
// - sent signals (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1/2, SIGALRM, SIGVTALRM, SIGPROF,
//   SIGXCPU, SIGXFSZ, SIGPIPE, SIGIO, SIGPWR, SIGSTKFLT and the real-time signals): restore, then
//   the process exits 128+signo;
// - faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS): restore, then the fault
//   takes its course (the previous handler, e.g. a sanitizer's, or a core dump).
// A signal the process ignores (SIG_IGN, e.g. SIGHUP under nohup) stays ignored, except a
// SIGPIPE sent by another process (a write to a closed pipe is still ignored), and a signal
// with a handler of the program's own, other than SIGINT/SIGTERM/SIGHUP, is left to it.
//
// Async-signal-safety by the self-pipe method: the handler only write()s the signal number to a
// pipe (async-signal-safe); a dedicated watcher thread reads it and does the real work (NVML calls,
// journal update, locks), which must never run inside a handler. A self-pipe rather than blocking
// the signals and sigwait()ing: a blocked mask is inherited by the workload processes Regime
// starts, while handlers are reset to default by exec. A fault's handler waits (at most 5 s) for
// the watcher before it lets the fault go on; it runs on an alternate stack in the thread that
// created the first guard, so a stack overflow there still restores.
#include <vector>

namespace regime {

class PowerLimitGuard;

// The first live guard installs the handlers (the watcher thread is started once per process);
// the last one to go puts back the dispositions it found, so a process outlives its guards with
// its own signal handling intact. Thread-safe.
void register_live_guard(PowerLimitGuard* guard);
void unregister_live_guard(PowerLimitGuard* guard);

// True once a signal has started restoring: from then on no guard may set a limit again.
bool terminating_on_signal();

// The signals a live guard handles (for tests and docs): sent ones, then faults.
std::vector<int> restoring_signals();
std::vector<int> restoring_fault_signals();

}  // namespace regime
