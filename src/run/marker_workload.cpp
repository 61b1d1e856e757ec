#include "run/marker_workload.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "common/error.hpp"
#include "run/step_marker.hpp"

namespace regime {

namespace {

std::atomic<int> g_signal{0};

extern "C" void on_end_signal(int sig) { g_signal.store(sig); }

std::string errno_text() { return std::strerror(errno); }

}  // namespace

MarkerWorkload::MarkerWorkload(std::string name, std::string socket_path, std::optional<uid_t> uid,
                               std::optional<gid_t> gid)
    : name_(std::move(name)), socket_path_(std::move(socket_path)) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.empty() || socket_path_.size() >= sizeof(addr.sun_path))
    throw Error(ErrorKind::Io, "step socket path '" + socket_path_ + "' is empty or too long");
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  struct stat st {};
  if (::lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
    ::unlink(socket_path_.c_str());  // left by an earlier process of the same job
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    std::string why = errno_text();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw Error(ErrorKind::Io, "cannot open the step socket " + socket_path_ + ": " + why);
  }
  int rcvbuf = 1 << 20;
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (uid && (::chown(socket_path_.c_str(), *uid, gid.value_or(static_cast<gid_t>(-1))) != 0 ||
              ::chmod(socket_path_.c_str(), 0600) != 0)) {
    std::string why = errno_text();
    ::close(fd_);
    ::unlink(socket_path_.c_str());
    fd_ = -1;
    throw Error(ErrorKind::Io, "cannot give the step socket " + socket_path_ + " to uid " +
                                   std::to_string(*uid) + ": " + why);
  }
}

MarkerWorkload::MarkerWorkload(std::string name, std::string socket_path, pid_t watched)
    : MarkerWorkload(std::move(name), std::move(socket_path), std::nullopt, std::nullopt) {
  watched_ = watched;
}

MarkerWorkload::~MarkerWorkload() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(socket_path_.c_str());
  }
}

void MarkerWorkload::start(double) {
  struct sigaction sa {};
  sa.sa_handler = on_end_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

std::vector<Step> MarkerWorkload::poll_steps() {
  std::vector<Step> out;
  static thread_local std::vector<char> buf(kMaxStepDatagramBytes);
  for (;;) {
    ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) break;  // EAGAIN: nothing more now
    std::string_view text(buf.data(), static_cast<size_t>(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    if (watched_ && text == "end") {
      ended_ = true;
      continue;
    }
    for (StepParse& p : parse_step_batch(std::string_view(buf.data(), static_cast<size_t>(n)))) {
      if (p.step) {
        out.push_back(*p.step);
        ++received_;
      } else {
        ++malformed_;
        last_error_ = p.error;
      }
    }
  }
  return out;
}

bool MarkerWorkload::finished() {
  // A watched process that is gone (its pid no longer names a process) has ended its work.
  if (watched_ && !ended_ && ::kill(*watched_, 0) != 0 && errno == ESRCH) ended_ = true;
  return stopped_ || ended_ || g_signal.load() != 0;
}

std::optional<int> MarkerWorkload::exit_status() {
  if (!finished()) return std::nullopt;
  int sig = g_signal.load();
  return sig != 0 ? 128 + sig : 0;
}

int MarkerWorkload::interrupted_by() const { return g_signal.load(); }

}  // namespace regime
