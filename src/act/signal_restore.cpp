#include "act/signal_restore.hpp"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "act/power_limit_guard.hpp"
#include "common/error.hpp"
#include "common/exit_hooks.hpp"

namespace regime {

namespace {

constexpr int kMaxSignal = 65;  // signal numbers 1..64 on Linux
// How long a fault's handler waits for the watcher to restore before it lets the fault go on.
constexpr long kFaultWait_ms = 5000;

bool is_fault(int signo) {
  switch (signo) {
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGABRT:
    case SIGTRAP:
    case SIGSYS:
      return true;
    default:
      return false;
  }
}

// Handlers always replace what is there (and chain to it when no guard is live), as the
// run loop's workload forwarding stacks on them; others only replace the default action.
bool always_taken(int signo) { return signo == SIGINT || signo == SIGTERM || signo == SIGHUP; }

std::vector<int> all_signals() {
  std::vector<int> s = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,  SIGVTALRM,
                        SIGPROF, SIGXCPU, SIGXFSZ, SIGPIPE, SIGIO,   SIGPWR,  SIGSTKFLT};
  for (int rt = SIGRTMIN; rt <= SIGRTMAX; ++rt) s.push_back(rt);
  for (int f : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) s.push_back(f);
  return s;
}

std::mutex registry_mu;  // guards the registry and the installation below
std::set<PowerLimitGuard*>& live_guards() {
  static std::set<PowerLimitGuard*> s;
  return s;
}
int pipe_fds[2] = {-1, -1};
// Read by the handler, so lock-free: a handler cannot take registry_mu.
std::atomic<int> live_guard_count{0};
std::atomic<bool> terminating{false};
// Set by the watcher once it has restored after a fault, for the waiting handler.
std::atomic<bool> fault_restored{false};
// The dispositions found when the first guard came (put back when the last one goes), and which
// signals we took.
struct sigaction previous_actions[kMaxSignal];
bool installed[kMaxSignal] = {};
// SIGPIPE was ignored when our handler came (Regime ignores it while it copies a workload's
// output, to outlive a closed stdout): one raised by a write to a closed pipe stays ignored.
std::atomic<bool> pipe_was_ignored{false};

// Sent by another process (kill, sigqueue), rather than raised by a fault or by this process
// itself (abort, raise): then nothing here is waiting on the signal's outcome.
bool sent_from_outside(const siginfo_t* info) {
  return info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE) &&
         info->si_pid != ::getpid();
}

// The byte written to the pipe: the signal number, with this bit when the handler waits.
constexpr unsigned char kHandlerWaits = 0x80;

extern "C" void on_signal(int signo, siginfo_t* info, void*) {
  int saved = errno;
  if (signo == SIGPIPE && pipe_was_ignored.load() && !sent_from_outside(info)) {
    errno = saved;  // a write to a closed pipe, which this process meant to survive
    return;
  }
  if (live_guard_count.load() > 0) {
    // A fault, or an abort() in this process, must not go on before the limits are restored:
    // the handler waits for the watcher. Any other signal just hands over to the watcher.
    const bool wait = is_fault(signo) && !sent_from_outside(info);
    unsigned char b = static_cast<unsigned char>(signo) | (wait ? kHandlerWaits : 0);
    ssize_t n = ::write(pipe_fds[1], &b, 1);  // async-signal-safe; a full pipe drops a duplicate
    (void)n;
    if (wait) {
      // Then let the fault go on: the previous disposition gets a fault that repeats when we
      // return, or, for a raised signal, the signal raised again.
      timespec tick{0, 10 * 1000 * 1000};
      for (long waited = 0; waited < kFaultWait_ms && !fault_restored.load(); waited += 10)
        ::nanosleep(&tick, nullptr);
      ::sigaction(signo, &previous_actions[signo], nullptr);
      if (info == nullptr || info->si_code <= 0) ::raise(signo);
    }
  } else if (signo > 0 && signo < kMaxSignal) {
    // No guard left, yet this handler is still installed (put back by a handler that was stacked
    // on top of ours): behave as what was there before us. The signal is blocked while we run,
    // so the re-raised one is delivered to that disposition once we return.
    ::sigaction(signo, &previous_actions[signo], nullptr);
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
      const bool handler_waits = (b & kHandlerWaits) != 0;
      const int signo = b & ~kHandlerWaits;
      {
        std::lock_guard lock(registry_mu);
        if (!live_guards().empty()) {
          terminating.store(true);
          write_stderr(is_fault(signo) ? "regime: crashed; restoring power limits\n"
                                       : "regime: caught a termination signal; restoring power "
                                         "limits\n");
          for (PowerLimitGuard* g : live_guards()) g->restore_for_signal();
          run_exit_hooks();  // stop the command Regime started, remove its private files
          if (handler_waits) {
            // The faulting thread ends the process; never let a guard work again meanwhile.
            fault_restored.store(true);
            for (;;) ::pause();
          }
          if (is_fault(signo)) {
            // Sent from outside: end by the signal itself, as it would have ended us.
            ::signal(signo, SIG_DFL);
            ::kill(::getpid(), signo);
            ::sleep(1);
          }
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

// An alternate signal stack for the calling thread (once), so a fault from a stack overflow in
// it can still run the handler.
void ensure_alternate_stack() {
  static thread_local bool done = false;
  if (done) return;
  done = true;
  stack_t current{};
  if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) return;
  constexpr size_t kSize = 64 * 1024;
  stack_t ss{};
  ss.ss_sp = new char[kSize];  // never freed: the thread may take a signal until it ends
  ss.ss_size = kSize;
  ::sigaltstack(&ss, nullptr);
}

bool is_ours(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) != 0 && a.sa_sigaction == on_signal;
}

// Called with registry_mu held, when the first guard comes.
void install_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  for (int signo : all_signals()) {
    struct sigaction found {};
    if (::sigaction(signo, nullptr, &found) != 0) continue;
    installed[signo] = false;
    if (is_ours(found)) {
      // Left installed under a stacked handler that put it back: what was before us is still
      // the disposition recorded the first time, not ourselves.
      installed[signo] = true;
      continue;
    }
    bool default_action = (found.sa_flags & SA_SIGINFO) == 0 && found.sa_handler == SIG_DFL;
    bool ignored = (found.sa_flags & SA_SIGINFO) == 0 && found.sa_handler == SIG_IGN;
    // An ignored signal cannot end the process, except SIGPIPE: ignored against writes to a
    // closed pipe, yet `kill -PIPE` still means "stop" (exit 141 after restoring).
    if (signo == SIGPIPE) pipe_was_ignored.store(ignored);
    if (ignored && signo != SIGPIPE) continue;
    if (!default_action && !ignored && !always_taken(signo) && !is_fault(signo))
      continue;  // the program's
    previous_actions[signo] = found;
    if (::sigaction(signo, &sa, nullptr) == 0) installed[signo] = true;
  }
}

// Called with registry_mu held, when the last guard goes. A handler stacked on top of ours (the
// run loop's forwarding) is left alone: it puts ours back when it ends, and ours then defers to
// the previous disposition (see on_signal).
void uninstall_handlers() {
  for (int signo : all_signals()) {
    if (!installed[signo]) continue;
    struct sigaction now {};
    ::sigaction(signo, nullptr, &now);
    if (is_ours(now)) ::sigaction(signo, &previous_actions[signo], nullptr);
  }
}

}  // namespace

std::vector<int> restoring_signals() {
  std::vector<int> out;
  for (int s : all_signals())
    if (!is_fault(s)) out.push_back(s);
  return out;
}

std::vector<int> restoring_fault_signals() {
  std::vector<int> out;
  for (int s : all_signals())
    if (is_fault(s)) out.push_back(s);
  return out;
}

bool terminating_on_signal() { return terminating.load(); }

void register_live_guard(PowerLimitGuard* guard) {
  static std::once_flag once;
  std::call_once(once, start_watcher);
  ensure_alternate_stack();
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
