#pragma once
// Work that must still happen when a signal ends the process without unwinding (the signal
// watcher restores the power limits, then calls _exit): stop the command Regime started, remove
// its private directory. Hooks run on the watcher thread, never inside a signal handler, in the
// order they were added; each must be quick and must not throw.
#include <functional>

namespace regime {

// Returns an id for remove_exit_hook. Thread-safe.
int add_exit_hook(std::function<void()> hook);
void remove_exit_hook(int id);
// Runs every hook (exceptions are swallowed). Called by the signal watcher just before it ends
// the process.
void run_exit_hooks() noexcept;

}  // namespace regime
