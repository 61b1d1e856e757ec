#include "run/process_workload.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

#include "common/error.hpp"
#include "common/exit_hooks.hpp"
#include "common/split.hpp"
#include "run/step_marker.hpp"

extern char** environ;

namespace regime {

namespace {

// The command's process group, for the signal handler (one command runs at a time).
std::atomic<pid_t> g_child_pgid{0};
// Set once the command has ended: from then on a signal is regime's own to handle.
std::atomic<bool> g_command_ended{false};
volatile sig_atomic_t g_forwarded_signal = 0;
// The dispositions the forwarding replaced (a PowerLimitGuard's, or the default).
struct sigaction g_previous_int {
}, g_previous_term{}, g_previous_hup{};

struct sigaction* previous_for(int sig) {
  return sig == SIGINT ? &g_previous_int : sig == SIGTERM ? &g_previous_term : &g_previous_hup;
}

extern "C" void forward_signal(int sig) {
  int saved = errno;
  pid_t pgid = g_child_pgid.load();
  if (pgid > 0) {
    ::kill(-pgid, sig);
    g_forwarded_signal = sig;
  } else if (g_command_ended.load()) {
    // Nothing left to forward to: chain to the previous disposition (a guard restores the limit
    // and exits 128+sig; the default ends regime). The signal is blocked while we run, so the
    // re-raised one reaches that disposition once we return.
    ::sigaction(sig, previous_for(sig), nullptr);
    ::raise(sig);
  } else {
    g_forwarded_signal = sig;  // the command is being started: start() forwards it then
  }
  errno = saved;
}

std::string errno_text() { return std::strerror(errno); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the reader went away: the command's output is lost, the run goes on
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);  // the shell's convention
  return 1;
}

// Private directories of regime processes that ended without removing theirs (SIGKILL, a
// crash): "regime-PID-XXXXXX" of this user whose PID no longer runs. Removed before a new one is
// made, so they never pile up.
void remove_stale_temp_dirs(const std::string& parent) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("regime-", 0) != 0) continue;
    size_t dash = name.find('-', 7);
    if (dash == std::string::npos || dash == 7) continue;
    std::string pid_text = name.substr(7, dash - 7);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
      std::filesystem::remove_all(entry.path(), ec);
  }
}

std::string make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  remove_stale_temp_dirs(parent);
  std::string pattern = parent + "/regime-" + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw Error(ErrorKind::Io, "cannot create a private directory for the step socket (" + pattern +
                                   "): " + errno_text());
  return pattern;
}

// The environment for the command: ours, with REGIME_STEP_SOCKET replaced (or removed).
std::vector<std::string> child_environment(const std::string& socket_path) {
  std::vector<std::string> env;
  std::string prefix = std::string(kStepSocketEnv) + "=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
  if (!socket_path.empty()) env.push_back(prefix + socket_path);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The value of NAME in an environment list, if it is there.
std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  return std::nullopt;
}

// The files execvp would try for `command` on `path`, in order (an empty entry is the working
// directory). The child tries them itself, after it has become the user who runs it, so a file
// that user cannot execute (in root's home, say) is passed over just as execvp would.
std::vector<std::string> command_candidates(const std::string& command, const std::string& path) {
  if (command.find('/') != std::string::npos) return {command};
  std::vector<std::string> out;
  for (const std::string& dir : split_fields(path, ':'))
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + command);
  return out;
}

// What a child reports through the status pipe when it cannot become the command.
struct LaunchFailure {
  enum Stage : int { kExec = 0, kSetGroups = 1, kSetGid = 2, kSetUid = 3 };
  int stage = kExec;
  int error = 0;  // errno; 0: no failure
};

// Between fork and exec only async-signal-safe calls: everything is prepared before the fork.
[[noreturn]] void become_command(char* const files[], char* const argv[], char* const envp[],
                                 int stdout_fd, int stderr_fd, bool stdout_to_stderr,
                                 const WorkloadUser* user, int status_fd) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGINT, &dfl, nullptr);
  ::sigaction(SIGTERM, &dfl, nullptr);
  ::sigaction(SIGPIPE, &dfl, nullptr);
  ::setpgid(0, 0);  // its own group: signals reach all its processes
  if (stdout_fd >= 0) ::dup2(stdout_fd, STDOUT_FILENO);
  if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);
  if (stdout_fd < 0 && stdout_to_stderr) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  LaunchFailure failure;
  // Groups first, then the group id, then the user id: after setuid there is no way back.
  if (user != nullptr) {
    if (::setgroups(user->groups.size(), user->groups.data()) != 0)
      failure = {LaunchFailure::kSetGroups, errno};
    else if (::setgid(user->gid) != 0)
      failure = {LaunchFailure::kSetGid, errno};
    else if (::setuid(user->uid) != 0)
      failure = {LaunchFailure::kSetUid, errno};
  }
  if (failure.error == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // As execvp: go on past a file that is not there or may not be run; a permission refusal is
    // what is reported when nothing ran.
    bool denied = false;
    failure.error = ENOENT;
    for (char* const* file = files; *file != nullptr; ++file) {
      ::execve(*file, argv, envp);
      if (errno == EACCES) {
        denied = true;
      } else if (errno != ENOENT && errno != ENOTDIR) {
        failure.error = errno;
        break;
      }
    }
    if (denied && failure.error == ENOENT) failure.error = EACCES;
  }
  [[maybe_unused]] ssize_t n = ::write(status_fd, &failure, sizeof failure);
  ::_exit(127);
}

struct Spawned {
  pid_t pid = -1;
  LaunchFailure failure;  // error 0: running
};

// fork + exec (posix_spawn cannot change the user): the child reports through a close-on-exec
// pipe why it could not become the command, and at a successful exec the pipe closes empty, so
// the caller learns of a failure at once, as from posix_spawn.
Spawned spawn_command(char* const files[], char* const argv[], char* const envp[],
                      const int child_ends[2], bool stdout_to_stderr, const WorkloadUser* user) {
  Spawned out;
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    out.failure.error = errno;
    return out;
  }
  // No handler of ours may run in the child before it has reset the dispositions.
  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  const pid_t pid = ::fork();
  if (pid == 0)
    become_command(files, argv, envp, child_ends[0], child_ends[1], stdout_to_stderr, user,
                   status_pipe[1]);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::close(status_pipe[1]);
  if (pid < 0) {
    out.failure.error = fork_errno;
  } else {
    ::setpgid(pid, pid);  // here too, so the group exists before the terminal is handed over
    LaunchFailure failure;
    ssize_t n;
    while ((n = ::read(status_pipe[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
    }
    if (n == static_cast<ssize_t>(sizeof failure)) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      out.failure = failure;
    } else {
      out.pid = pid;
    }
  }
  ::close(status_pipe[0]);
  return out;
}

// Binds the step socket in a fresh private directory and, under sudo, gives both to the user who
// runs the command. `temp_dir` and `socket_fd` are set as soon as each exists, so the owner's
// cleanup removes them even when a later step throws.
void open_step_socket(std::string& temp_dir, std::string& socket_path, int& socket_fd,
                      const std::optional<WorkloadUser>& user) {
  temp_dir = make_temp_dir();
  socket_path = temp_dir + "/steps.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path))
    throw Error(ErrorKind::Io, "step socket path too long (" + socket_path +
                                   "): set TMPDIR to a shorter directory");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  socket_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (socket_fd < 0 ||
      ::bind(socket_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    throw Error(ErrorKind::Io, "cannot open step socket " + socket_path + ": " + errno_text());
  // Room for a few seconds of markers even at thousands of steps a second, should the loop
  // stall (best effort: the kernel caps it at net.core.rmem_max).
  int rcvbuf = 1 << 20;
  ::setsockopt(socket_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  // The command, run as the sudo caller, must reach the socket: the private directory and the
  // socket become that user's (regime keeps the bound descriptor, so it still reads them).
  if (user && (::chown(temp_dir.c_str(), user->uid, user->gid) != 0 ||
               ::chown(socket_path.c_str(), user->uid, user->gid) != 0))
    throw Error(ErrorKind::Io, "cannot give the step socket " + socket_path + " to " + user->name +
                                   ": " + errno_text());
}

// A close-on-exec pipe for one of the command's output streams: regime reads the non-blocking
// read end, the child writes to the other.
struct OutputPipe {
  int read_fd = -1, write_fd = -1;
};

OutputPipe open_output_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    throw Error(ErrorKind::Io, "cannot create an output pipe: " + errno_text());
  ::fcntl(p[0], F_SETFL, O_NONBLOCK);
  return {p[0], p[1]};
}

// The dispositions that forwarding replaced, for restore_signals().
struct ReplacedDispositions {
  struct sigaction sigint = {};
  struct sigaction sigterm = {};
  struct sigaction sighup = {};
  struct sigaction sigpipe = {};
  bool forward_hup = false;  // SIGHUP was not ignored, so it is forwarded too
};

// Forwards the user's SIGINT/SIGTERM/SIGHUP to the command's group (a hang-up ends the command
// too, unless SIGHUP is ignored, as under nohup); survives a closed stdout.
ReplacedDispositions install_signal_forwarding() {
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  g_forwarded_signal = 0;
  g_command_ended.store(false);
  ReplacedDispositions old;
  ::sigaction(SIGINT, &forward, &old.sigint);
  ::sigaction(SIGTERM, &forward, &old.sigterm);
  ::sigaction(SIGHUP, nullptr, &old.sighup);
  old.forward_hup = (old.sighup.sa_flags & SA_SIGINFO) != 0 || old.sighup.sa_handler != SIG_IGN;
  if (old.forward_hup) ::sigaction(SIGHUP, &forward, nullptr);
  // A write to a closed pipe must not end regime mid-run, so the default SIGPIPE is ignored; a
  // handler already there stays (a power-limit guard's survives such writes and restores every
  // limit on a SIGPIPE another process sends).
  ::sigaction(SIGPIPE, nullptr, &old.sigpipe);
  if ((old.sigpipe.sa_flags & SA_SIGINFO) == 0 && old.sigpipe.sa_handler == SIG_DFL)
    ::sigaction(SIGPIPE, &ignore, nullptr);
  // A workload started while another's forwarding is still installed chains to what that one
  // found, never to the forwarding itself (which would re-raise forever).
  if (old.sigint.sa_handler != forward_signal) g_previous_int = old.sigint;
  if (old.sigterm.sa_handler != forward_signal) g_previous_term = old.sigterm;
  if (old.forward_hup && old.sighup.sa_handler != forward_signal) g_previous_hup = old.sighup;
  return old;
}

// Everything the child needs to exec, made before the fork: after it nothing may allocate.
struct CommandImage {
  std::vector<std::string> argv, env;
  std::vector<std::string> files;  // the candidates to execve, in execvp's order
};

CommandImage command_image(const std::vector<std::string>& argv, const std::string& socket_path,
                           const std::optional<WorkloadUser>& user) {
  CommandImage image;
  image.argv = argv;
  image.env = child_environment(socket_path);
  if (user) {
    const std::string runtime_dir = "/run/user/" + std::to_string(user->uid);
    image.env = environment_for(*user, image.env, ::access(runtime_dir.c_str(), F_OK) == 0);
  }
  // Looked up on the command's own PATH (under sudo, the one made for the user).
  image.files = command_candidates(
      argv.front(), env_value(image.env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  return image;
}

// Why the command could not be started, as the error start() throws.
Error launch_error(const LaunchFailure& failure, const std::string& command,
                   const std::optional<WorkloadUser>& user) {
  const int rc = failure.error;
  if (failure.stage != LaunchFailure::kExec && user) {
    constexpr const char* kWhat[] = {"", "set the groups of", "set the group of", "become"};
    return Error(ErrorKind::NoPermission, std::string("cannot ") + kWhat[failure.stage] + " user " +
                                              user->name + " for '" + command +
                                              "': " + std::strerror(rc));
  }
  return Error(rc == ENOENT ? ErrorKind::NotFound : ErrorKind::Io,
               "cannot start '" + command + "': " + std::strerror(rc));
}

// A command in its own group must own the terminal, or reading stdin would stop it (SIGTTIN).
// True when the terminal was handed to `pgid`.
bool hand_terminal_to(pid_t pgid) {
  if (!::isatty(STDIN_FILENO) || ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return false;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
  const bool took = ::tcsetpgrp(STDIN_FILENO, pgid) == 0;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (took) ::kill(-pgid, SIGCONT);  // in case it read before it owned the terminal
  return took;
}

}  // namespace

ProcessWorkload::ProcessWorkload(ProcessOptions options, const WallClock& clock)
    : options_(std::move(options)), clock_(clock) {
  if (options_.argv.empty() || options_.argv.front().empty())
    throw Error(ErrorKind::InvalidArgument, "no command given to run (put it after --)");
  if (options_.step_regex) regex_.emplace(*options_.step_regex);
  if (!(options_.stop_grace_s >= 0))
    throw Error(ErrorKind::InvalidArgument, "stop grace period must be >= 0 seconds");
  user_ = workload_user(options_.workload_as_root);
}

ProcessWorkload::~ProcessWorkload() {
  if (pid_ > 0 && !exit_status_) {
    try {
      stop();
    } catch (...) {
    }
  }
  stop_listener();
  give_back_terminal();
  restore_signals();
  cleanup_socket();
  for (auto& s : streams_) close_fd(s.fd);
  close_fd(wake_pipe_[0]);
  close_fd(wake_pipe_[1]);
}

std::string ProcessWorkload::name() const {
  std::string out;
  for (const auto& a : options_.argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

void ProcessWorkload::start(double) {
  if (pid_ > 0) throw Error(ErrorKind::Internal, "process workload started twice");
  if (options_.step_socket) open_step_socket(temp_dir_, socket_path_, socket_fd_, user_);
  int child_ends[2] = {-1, -1};
  if (regex_) {
    for (int i = 0; i < 2; ++i) {
      const OutputPipe pipe = open_output_pipe();
      streams_[i].fd = pipe.read_fd;
      streams_[i].out_fd = i == 0 && !options_.stdout_to_stderr ? STDOUT_FILENO : STDERR_FILENO;
      child_ends[i] = pipe.write_fd;
    }
  }
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Error(ErrorKind::Io, "cannot create a pipe: " + errno_text());

  const ReplacedDispositions old = install_signal_forwarding();
  old_int_ = old.sigint;
  old_term_ = old.sigterm;
  old_hup_ = old.sighup;
  old_pipe_ = old.sigpipe;
  forward_hup_ = old.forward_hup;
  handlers_installed_ = true;

  CommandImage image = command_image(options_.argv, socket_path_, user_);
  auto argv_c = c_strings(image.argv);
  auto env_c = c_strings(image.env);
  auto files_c = c_strings(image.files);
  const Spawned spawned = spawn_command(files_c.data(), argv_c.data(), env_c.data(), child_ends,
                                        options_.stdout_to_stderr, user_ ? &*user_ : nullptr);
  const pid_t pid = spawned.pid;
  for (int& fd : child_ends) close_fd(fd);
  if (spawned.failure.error != 0) {
    restore_signals();
    // A signal that came while spawning had no command to go to: it is regime's own.
    if (int early = g_forwarded_signal; early != 0) ::raise(early);
    throw launch_error(spawned.failure, options_.argv.front(), user_);
  }
  pid_ = pid;
  g_child_pgid.store(pid);
  // Should a signal end regime without unwinding (the power-limit guard's watcher), the command
  // must not outlive it, nor its private directory.
  exit_hook_ = add_exit_hook([pgid = pid, dir = temp_dir_] {
    ::kill(-pgid, SIGTERM);
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  });
  if (int early = g_forwarded_signal; early != 0) ::kill(-pid, early);  // arrived while spawning
  last_regex_end_s_ = clock_.unix_now_s();
  took_terminal_ = hand_terminal_to(pid_);
  // Only piped output needs a thread. Step datagrams wait in the socket's buffer and are drained
  // by poll_steps() on the run loop's own 10 ms tick: they carry their own timestamps, so a
  // thread woken per datagram only added a wake-up per step (1907 fewer voluntary context
  // switches over 1920 steps, docs/performance.md).
  if (regex_) listener_ = std::thread([this] { listen(); });
}

void ProcessWorkload::listen() {
  // Lines that come faster than one per kFastLineGap_s (a job printing hundreds of step lines a
  // second) are read once per kOutputReadPeriod_s instead of once per flush: a wake-up costs
  // tens of microseconds in a VM, so one per line at 1000 lines a second would cost more than all
  // the rest of the watcher. Slower lines are read, and their steps stamped, as they arrive.
  bool batching = false;
  double last_read_s = 0;  // none yet: the first line is never taken for one of a fast run
  for (;;) {
    pollfd fds[4];
    nfds_t n = 0;
    fds[n++] = {wake_pipe_[0], POLLIN, 0};
    for (auto& s : streams_)
      if (s.fd >= 0) fds[n++] = {s.fd, POLLIN, 0};
    bool batch = false;
    if (batching) {
      pollfd wake{wake_pipe_[0], POLLIN, 0};
      ::poll(&wake, 1, static_cast<int>(kOutputReadPeriod_s * 1000));  // a stop ends the wait
      batch = ::poll(fds, n, 0) > 0;
    }
    if (!batch && ::poll(fds, n, -1) < 0 && errno != EINTR) return;
    const double now_s = clock_.unix_now_s();
    wake_lines_ = 0;
    wake_matches_ = 0;
    for (auto& s : streams_)
      if (s.fd >= 0 && !drain_stream(s)) close_fd(s.fd);
    stamp_matched_lines(batch, last_read_s, now_s);
    // Batches go on while they hold lines at that pace.
    batching = batch ? wake_lines_ >= kOutputReadPeriod_s / kFastLineGap_s
                     : wake_lines_ > 0 && now_s - last_read_s < kFastLineGap_s;
    last_read_s = now_s;
    if (stopping_.load()) return;  // drained once more after the command ended
  }
}

void ProcessWorkload::drain_socket() {
  static thread_local std::vector<char> buf(kMaxStepDatagramBytes);
  for (;;) {
    ssize_t n = ::recv(socket_fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) return;  // EAGAIN: nothing more now
    std::vector<StepParse> batch =
        parse_step_batch(std::string_view(buf.data(), static_cast<size_t>(n)));
    if (batch.size() == 1) ++single_step_datagrams_;
    std::lock_guard lock(mutex_);
    for (StepParse& p : batch) {
      if (p.step) {
        pending_.push_back(*p.step);
      } else {
        ++malformed_;
        last_error_ = p.error;
      }
    }
  }
}

bool ProcessWorkload::drain_stream(Stream& s) {
  char buf[8192];
  // Bounded, so a grandchild that keeps writing cannot hold the final drain forever.
  for (int chunk = 0; chunk < 64; ++chunk) {
    ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n == 0) {
      if (!s.line.empty()) on_line(s.line);
      s.line.clear();
      return false;
    }
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    write_all(s.out_fd, buf, static_cast<size_t>(n));
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c == '\n' || c == '\r') {  // progress bars end their lines with \r
        if (!s.line.empty()) on_line(s.line);
        s.line.clear();
        s.overlong = false;
      } else if (s.line.size() < kMaxStepLineBytes) {
        s.line.push_back(c);
      } else if (!s.overlong) {
        s.overlong = true;
        note_overlong_line();
      }
    }
  }
  return true;
}

void ProcessWorkload::note_overlong_line() {
  long count = 0;
  {
    std::lock_guard lock(mutex_);
    count = ++overlong_;
  }
  if (count == 1) {
    std::string msg = "regime: a line of the command's output is longer than " +
                      std::to_string(kMaxStepLineBytes) +
                      " bytes; --step-regex is matched against its first " +
                      std::to_string(kMaxStepLineBytes) + " bytes only\n";
    write_all(STDERR_FILENO, msg.data(), msg.size());
  }
}

void ProcessWorkload::on_line(const std::string& line) {
  ++wake_lines_;
  if (regex_ && regex_->search(line)) ++wake_matches_;
}

void ProcessWorkload::stamp_matched_lines(bool batch, double last_read_s, double now_s) {
  if (wake_matches_ == 0) return;
  std::lock_guard lock(mutex_);
  // A batch's lines arrived between the read before it and this one, in order: each is placed
  // at its share of that span, as lines that came at an even pace would be.
  const double from_s = std::max(last_read_s, last_regex_end_s_);
  for (int k = 1; k <= wake_matches_; ++k)
    stamp_step(batch ? from_s + (now_s - from_s) * k / wake_matches_ : clock_.unix_now_s());
}

void ProcessWorkload::stamp_step(double now) {
  // Lines that arrive together (output flushed in bursts) can share one clock reading: such a
  // step has no length and no time per step, so it is refused like a malformed marker.
  if (now <= last_regex_end_s_) {
    ++malformed_;
    last_error_ =
        "a line matched --step-regex at the same clock reading as the step before: a zero-length "
        "step, not counted (flush the command's output once per step)";
    return;
  }
  pending_.push_back(Step{regex_steps_++, last_regex_end_s_, now});
  last_regex_end_s_ = now;
}

void ProcessWorkload::judge_step_senders() {
  const auto now = std::chrono::steady_clock::now();
  if (single_step_window_start_ == std::chrono::steady_clock::time_point{})
    single_step_window_start_ = now;
  if (now - single_step_window_start_ < std::chrono::seconds(1)) return;
  fast_step_polls_ = single_step_datagrams_ > 4;
  single_step_datagrams_ = 0;
  single_step_window_start_ = now;
}

// Without a step socket there is nothing to read between ticks.
double ProcessWorkload::step_poll_period_s() const {
  return fast_step_polls_ && socket_fd_ >= 0 ? 0.01 : 0;
}

std::vector<Step> ProcessWorkload::poll_steps() {
  if (socket_fd_ >= 0) drain_socket();
  judge_step_senders();
  std::vector<Step> out;
  std::lock_guard lock(mutex_);
  out.swap(pending_);
  return out;
}

bool ProcessWorkload::finished() {
  if (exit_status_) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reap(status);
    return true;
  }
  if (r < 0 && errno == ECHILD) {  // reaped elsewhere: status unknown
    reap(W_EXITCODE(1, 0));
    return true;
  }
  return false;
}

void ProcessWorkload::reap(int status) {
  exit_status_ = decode_status(status);
  g_command_ended.store(true);
  g_child_pgid.store(0);
  stop_listener();
  give_back_terminal();
}

void ProcessWorkload::stop() {
  if (finished() || pid_ <= 0) return;
  ::kill(-pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(options_.stop_grace_s));
  while (std::chrono::steady_clock::now() < deadline) {
    if (finished()) return;
    ::usleep(10000);
  }
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reap(status);
}

std::optional<int> ProcessWorkload::exit_status() { return exit_status_; }

long ProcessWorkload::overlong_lines() const {
  std::lock_guard lock(mutex_);
  return overlong_;
}

long ProcessWorkload::malformed_markers() const {
  std::lock_guard lock(mutex_);
  return malformed_;
}

std::string ProcessWorkload::last_marker_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

int ProcessWorkload::forwarded_signal() { return g_forwarded_signal; }

void ProcessWorkload::stop_listener() {
  if (!listener_.joinable()) return;
  stopping_.store(true);
  char one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_pipe_[1], &one, 1);
  listener_.join();
}

int ProcessWorkload::interrupted_by() const { return pid_ > 0 ? g_forwarded_signal : 0; }

std::optional<int> ProcessWorkload::process_id() const {
  if (pid_ <= 0 || exit_status_) return std::nullopt;
  return static_cast<int>(pid_);
}

void ProcessWorkload::cleanup_socket() {
  if (exit_hook_ != 0) remove_exit_hook(exit_hook_);
  exit_hook_ = 0;
  close_fd(socket_fd_);
  std::error_code ec;
  if (!temp_dir_.empty()) std::filesystem::remove_all(temp_dir_, ec);
  temp_dir_.clear();
}

void ProcessWorkload::give_back_terminal() {
  if (!took_terminal_) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
  ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  took_terminal_ = false;
}

void ProcessWorkload::restore_signals() {
  if (!handlers_installed_) return;
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  if (forward_hup_) ::sigaction(SIGHUP, &old_hup_, nullptr);
  ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  handlers_installed_ = false;
}

}  // namespace regime
