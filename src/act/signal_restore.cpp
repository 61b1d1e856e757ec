#include "act/signal_restore.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "act/power_limit_guard.hpp"
#include "common/error.hpp"

namespace regime {

namespace {

std::mutex registry_mu;
std::set<PowerLimitGuard*>& live_guards() {
  static std::set<PowerLimitGuard*> s;
  return s;
}
int pipe_fds[2] = {-1, -1};

extern "C" void on_signal(int signo) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(signo);
  ssize_t n = ::write(pipe_fds[1], &b, 1);  // async-signal-safe; a full pipe drops a duplicate
  (void)n;
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
        }
      }
      // Leave without unwinding: other threads may be mid-call; every guard is restored.
      ::_exit(128 + signo);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::pause();  // the pipe broke: nothing more to watch
  }
}

void install() {
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw Error(ErrorKind::Internal,
                std::string("cannot create the signal pipe: ") + std::strerror(errno));
  std::thread(watch).detach();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

}  // namespace

void register_live_guard(PowerLimitGuard* guard) {
  static std::once_flag once;
  std::call_once(once, install);
  std::lock_guard lock(registry_mu);
  live_guards().insert(guard);
}

void unregister_live_guard(PowerLimitGuard* guard) {
  std::lock_guard lock(registry_mu);
  live_guards().erase(guard);
}

}  // namespace regime
