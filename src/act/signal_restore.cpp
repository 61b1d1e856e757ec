#include "act/signal_restore.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "act/power_limit_guard.hpp"
#include "common/error.hpp"

namespace regime {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kSignalCount = 3;

std::mutex registry_mu;  // guards the registry and the installation below
std::set<PowerLimitGuard*>& live_guards() {
  static std::set<PowerLimitGuard*> s;
  return s;
}
int pipe_fds[2] = {-1, -1};
// Read by the handler, so lock-free: a handler cannot take registry_mu.
std::atomic<int> live_guard_count{0};
// The dispositions found when the first guard came (put back when the last one goes).
struct sigaction previous_actions[kSignalCount];

int signal_index(int signo) {
  for (int i = 0; i < kSignalCount; ++i)
    if (kSignals[i] == signo) return i;
  return -1;
}

extern "C" void on_signal(int signo) {
  int saved = errno;
  if (live_guard_count.load() > 0) {
    unsigned char b = static_cast<unsigned char>(signo);
    ssize_t n = ::write(pipe_fds[1], &b, 1);  // async-signal-safe; a full pipe drops a duplicate
    (void)n;
  } else if (int i = signal_index(signo); i >= 0) {
    // No guard left, yet this handler is still installed (put back by a handler that was stacked
    // on top of ours): behave as what was there before us. The signal is blocked while we run,
    // so the re-raised one is delivered to that disposition once we return.
    ::sigaction(signo, &previous_actions[i], nullptr);
    ::raise(signo);
  }
  errno = saved;
}

void write_stderr(const char* s) {
  ssize_t n = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)n;
}

[[noreturn]] void watch() {
  for (;;) {
    unsigned char b = 0;
    ssize_t n = ::read(pipe_fds[0], &b, 1);
    if (n == 1) {
      int signo = b;
      {
        std::lock_guard lock(registry_mu);
        if (!live_guards().empty()) {
          write_stderr("regime: caught a termination signal; restoring power limits\n");
          for (PowerLimitGuard* g : live_guards()) g->restore_for_signal();
          // Leave without unwinding: other threads may be mid-call; every guard is restored.
          ::_exit(128 + signo);
        }
      }
      // The last guard went away between the signal and now, and took our handlers with it:
      // deliver the signal again to whatever handles it now.
      ::kill(::getpid(), signo);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::pause();  // the pipe broke: nothing more to watch
  }
}

// Once per process: the pipe and its watcher thread (idle while no guard lives).
void start_watcher() {
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw Error(ErrorKind::Internal,
                std::string("cannot create the signal pipe: ") + std::strerror(errno));
  std::thread(watch).detach();
}

// Called with registry_mu held, when the first guard comes.
void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < kSignalCount; ++i) ::sigaction(kSignals[i], &sa, &previous_actions[i]);
}

// Called with registry_mu held, when the last guard goes. A handler stacked on top of ours (the
// run loop's forwarding) is left alone: it puts ours back when it ends, and ours then defers to
// the previous disposition (see on_signal).
void uninstall_handlers() {
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction now {};
    ::sigaction(kSignals[i], nullptr, &now);
    if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == on_signal)
      ::sigaction(kSignals[i], &previous_actions[i], nullptr);
  }
}

}  // namespace

void register_live_guard(PowerLimitGuard* guard) {
  static std::once_flag once;
  std::call_once(once, start_watcher);
  std::lock_guard lock(registry_mu);
  if (live_guards().empty()) install_handlers();
  live_guards().insert(guard);
  live_guard_count.store(static_cast<int>(live_guards().size()));
}

void unregister_live_guard(PowerLimitGuard* guard) {
  std::lock_guard lock(registry_mu);
  if (live_guards().erase(guard) == 0) return;
  live_guard_count.store(static_cast<int>(live_guards().size()));
  if (live_guards().empty()) uninstall_handlers();
}

}  // namespace regime
