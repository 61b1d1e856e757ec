#include "agent/server.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace regime::agent {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void io_error(const std::string& what) {
  throw Error(ErrorKind::Io, fmt::format("{}: {}", what, std::strerror(errno)));
}

sockaddr_un address(const fs::path& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof a.sun_path)
    throw Error(ErrorKind::InvalidArgument, fmt::format("socket path {} is longer than {} bytes",
                                                        path.string(), sizeof a.sun_path - 1));
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  return a;
}

int listen_on(const fs::path& path) {
  sockaddr_un a = address(path);
  std::error_code ec;
  if (!path.parent_path().empty() && !fs::exists(path.parent_path(), ec)) {
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      throw Error(ErrorKind::Io,
                  fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
    ::chmod(path.parent_path().c_str(), 0755);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw Error(ErrorKind::Io,
                  fmt::format("{} exists and is not a socket: not replacing it", path.string()));
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool answers = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (probe >= 0) ::close(probe);
    if (answers)
      throw Error(ErrorKind::Io, fmt::format("another regimed answers on {}: one agent per socket",
                                             path.string()));
    ::unlink(path.c_str());  // left by an agent that was killed
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) io_error("socket");
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    io_error("cannot bind " + path.string());
  }
  // Every user may connect: the policy decides what each may do.
  ::chmod(path.c_str(), 0666);
  // A long backlog: connections refused at once, not left waiting behind a storm of connects.
  if (::listen(fd, 4096) != 0) io_error("listen on " + path.string());
  return fd;
}

// Answers waiting beyond this are not added to: the client's next request waits until it reads.
constexpr size_t kMaxQueuedOutBytes = 64 * 1024;
// New connections taken per pass of the loop, so that a storm of connects cannot starve the
// requests already read.
constexpr int kAcceptsPerPass = 64;
// The most bytes read from a connection being closed, so the client can read its last answer.
constexpr size_t kMaxDrainBytes = 64 * 1024;
// How long a user's groups are taken from the last lookup (the system's databases can be slow).
constexpr double kGroupsCache_s = 10;
// A user refused again within this time is counted, not logged line by line.
constexpr double kRefusalLogEvery_s = 10;

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct Client {
  int fd = -1;
  Peer peer;
  bool privileged = false;
  std::string in, out;
  bool close_after_write = false;
  bool input_ended = false;  // end of file or hang-up: answer what came, then close
  double last_activity_s = 0;
  std::optional<double> partial_since_s, unsent_since_s;

  bool has_request() const { return in.find('\n') != std::string::npos; }
  bool wants_input() const { return !input_ended && !close_after_write && !has_request(); }
  bool done() const { return (input_ended || close_after_write) && out.empty() && !has_request(); }
};

struct User {
  size_t open = 0;
  TokenBucket bucket;
  double refusal_logged_s = -kRefusalLogEvery_s;
  size_t refused_unlogged = 0;
};

void queue(Client& c, const nlohmann::json& answer) { c.out += answer.dump() + "\n"; }

// Sends what it can without blocking; false when the client is gone.
bool flush(Client& c, double now) {
  bool sent_some = false;
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    c.out.erase(0, static_cast<size_t>(n));
    sent_some = true;
  }
  if (c.out.empty())
    c.unsent_since_s.reset();
  else if (sent_some || !c.unsent_since_s)
    c.unsent_since_s = now;
  return true;
}

// Reads what the client sent without blocking (only while no complete request waits, so a flood
// stays in the kernel's buffer, not in the agent's memory).
void read_from(Client& c, double now) {
  char buf[8192];
  ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n > 0) {
    c.in.append(buf, static_cast<size_t>(n));
    c.last_activity_s = now;
    if (!c.has_request() && c.in.size() > kMaxRequestBytes) {
      queue(c, error_response(ErrorKind::OutOfRange,
                              fmt::format("request longer than the limit of {} bytes without a "
                                          "newline: closing the connection",
                                          kMaxRequestBytes)));
      c.in.clear();
      c.close_after_write = true;
    }
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK)) {
    c.input_ended = true;
  }
}

// Takes the client's next request line (blank lines skipped): nullopt when none is complete. A
// line over the limit is answered here and ends the connection.
std::optional<std::string> next_line(Client& c) {
  for (;;) {
    size_t nl = c.in.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    std::string line = c.in.substr(0, nl);
    c.in.erase(0, nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line.size() > kMaxRequestBytes) {
      queue(c, error_response(ErrorKind::OutOfRange,
                              fmt::format("request of {} bytes is longer than the limit of {} "
                                          "bytes: closing the connection",
                                          line.size(), kMaxRequestBytes)));
      c.in.clear();
      c.close_after_write = true;
      return std::nullopt;
    }
    return line;
  }
}

bool bytes_waiting(int fd) {
  char b = 0;
  return ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// Tells a connection that is not taken why, and closes it.
void refuse(int fd, const std::string& why) {
  std::string line = error_response(ErrorKind::Io, why).dump() + "\n";
  ssize_t n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)n;
  ::close(fd);
}

class Server {
 public:
  Server(Agent& agent, const ServeOptions& options, std::ostream& log, int listener)
      : agent_(agent), o_(options), limits_(options.limits), log_(log), listener_(listener) {
    spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  ~Server() {
    while (!clients_.empty()) drop(clients_.begin()->first);
    if (spare_fd_ >= 0) ::close(spare_fd_);
  }

  void run() {
    while (!stopping()) {
      const double now = now_s();
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      std::vector<uint64_t> ids;
      // Until the next token of a user whose requests wait for one, or 100 ms.
      double wait_s = 0.1;
      for (auto& [id, c] : clients_) {
        if (ready_to_serve(c, now)) wait_s = 0;
        if (wait_s > 0 && !c.privileged && c.has_request())
          wait_s = std::min(wait_s, seconds_to_token(users_.at(c.peer.uid).bucket, limits_, now));
        short events = 0;
        if (c.wants_input()) events |= POLLIN;
        if (!c.out.empty()) events |= POLLOUT;
        if (events == 0) continue;  // nothing to wait for: a hang-up shows at the next write
        fds.push_back({c.fd, events, 0});
        ids.push_back(id);
      }
      int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::ceil(wait_s * 1000)));
      if (ready < 0) {
        if (errno == EINTR) continue;
        io_error("poll");
      }
      const double polled = now_s();
      std::vector<uint64_t> gone;
      for (size_t k = 1; k < fds.size(); ++k) {
        Client& c = clients_.at(ids[k - 1]);
        const short r = fds[k].revents;
        if (r & (POLLIN | POLLHUP | POLLERR)) {
          if (c.wants_input())
            read_from(c, polled);
          else if (r & (POLLHUP | POLLERR))
            c.input_ended = true;
        }
        if (!flush(c, polled) || c.done()) gone.push_back(ids[k - 1]);
      }
      for (uint64_t id : gone) drop(id);
      if (fds[0].revents & POLLIN) accept_new(polled);
      expire(polled);
      serve_turn();
    }
  }

 private:
  bool stopping() const { return o_.stop && o_.stop->load(); }

  bool ready_to_serve(const Client& c, double now) {
    if (!c.has_request() || c.close_after_write || c.out.size() >= kMaxQueuedOutBytes) return false;
    if (c.privileged) return true;
    return seconds_to_token(users_.at(c.peer.uid).bucket, limits_, now) == 0;
  }

  // One turn of the round robin: one request of each user with one ready.
  void serve_turn() {
    const double now = now_s();
    std::vector<Waiting> waiting;
    for (auto& [id, c] : clients_)
      if (ready_to_serve(c, now)) waiting.push_back({id, c.peer.uid, c.privileged});
    for (uint64_t id : fair_turn(waiting, last_served_)) {
      if (stopping()) return;
      Client& c = clients_.at(id);
      if (!c.privileged) take_token(users_.at(c.peer.uid).bucket, limits_, now);
      if (std::optional<std::string> line = next_line(c)) {
        try {
          queue(c, agent_.handle(c.peer, id, parse_request(*line)));
        } catch (const Error& e) {
          queue(c, error_response(e.kind(), e.what()));
        }
      }
      c.last_activity_s = now_s();
      if (!flush(c, c.last_activity_s) || c.done()) drop(id);
    }
  }

  void accept_new(double now) {
    for (int k = 0; k < kAcceptsPerPass; ++k) {
      int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && refuse_without_descriptors()) continue;
        return;
      }
      ucred cred{};
      socklen_t len = sizeof cred;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        ::close(fd);
        continue;
      }
      Peer peer = peer_of(cred, now);
      const bool privileged = agent_.privileged(peer);
      auto [u, fresh] = users_.try_emplace(cred.uid);
      if (fresh) u->second.bucket = full_bucket(limits_, now);
      const OpenCounts open{unprivileged_open_, clients_.size(), u->second.open};
      if (std::optional<std::string> why = refusal(limits_, privileged, cred.uid, open)) {
        refuse(fd, *why);
        note_refusal(cred.uid, u->second, *why, now);
        continue;
      }
      Client c;
      c.fd = fd;
      c.peer = std::move(peer);
      c.privileged = privileged;
      c.last_activity_s = now;
      ++u->second.open;
      if (!privileged) ++unprivileged_open_;
      clients_.emplace(next_id_++, std::move(c));
    }
  }

  // Out of descriptors: the spare one makes room to tell the next connection so, rather than
  // leaving it (and every connection behind it, root's included) unanswered in the backlog.
  bool refuse_without_descriptors() {
    if (spare_fd_ < 0) return false;
    ::close(spare_fd_);
    int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0)
      refuse(fd, "regimed has no file descriptor left for another connection; try again later");
    spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0 && spare_fd_ >= 0;
  }

  void note_refusal(uid_t uid, User& u, const std::string& why, double now) {
    ++u.refused_unlogged;
    if (now - u.refusal_logged_s < kRefusalLogEvery_s) return;
    log_ << fmt::format("regimed: refused {} connection(s) of uid {}: {}\n", u.refused_unlogged,
                        uid, why)
         << std::flush;
    u.refused_unlogged = 0;
    u.refusal_logged_s = now;
  }

  Peer peer_of(const ucred& cred, double now) {
    const auto key = std::make_pair(cred.uid, cred.gid);
    auto it = groups_.find(key);
    if (it == groups_.end() || now - it->second.first > kGroupsCache_s) {
      if (groups_.size() > 4096) groups_.clear();
      Peer p = peer_with_groups(cred.pid, cred.uid, cred.gid);
      it = groups_.insert_or_assign(key, std::make_pair(now, p.groups)).first;
    }
    return Peer{cred.pid, cred.uid, cred.gid, it->second.second};
  }

  void expire(double now) {
    std::vector<uint64_t> ended;
    for (auto& [id, c] : clients_) {
      // An unfinished request has a deadline; one behind complete requests waits for them.
      if (!c.in.empty() && !c.has_request()) {
        if (!c.partial_since_s) c.partial_since_s = now;
      } else {
        c.partial_since_s.reset();
      }
      const bool busy = c.has_request() || !c.out.empty();
      ConnectionTimes t{c.last_activity_s, c.partial_since_s, c.unsent_since_s, busy, false};
      Expiry e = expiry(t, limits_, now);
      // Asked only then: a connection's caps are its own, and last until it closes; and a
      // request that came since the last read is not idle (closing would drop it unanswered).
      if (e == Expiry::Idle && (agent_.holds_caps(id) || bytes_waiting(c.fd))) e = Expiry::None;
      if (e == Expiry::None) continue;
      if (std::string why = expiry_message(e, limits_); !why.empty()) {
        queue(c, error_response(ErrorKind::InvalidArgument, why));
        flush(c, now);
      }
      ended.push_back(id);
    }
    for (uint64_t id : ended) drop(id);
    for (auto it = users_.begin(); it != users_.end();) {
      const bool idle = it->second.open == 0 && it->second.refused_unlogged == 0 &&
                        bucket_full(it->second.bucket, limits_, now);
      it = idle ? users_.erase(it) : std::next(it);
    }
  }

  void drop(uint64_t id) {
    auto it = clients_.find(id);
    if (it == clients_.end()) return;
    Client& c = it->second;
    // Unread input makes close() reset the connection, which can cost the client the error
    // it has not read yet: read what is there first (a bounded amount: a flood never ends).
    char sink[8192];
    size_t drained = 0;
    ssize_t n = 0;
    while (drained < kMaxDrainBytes && (n = ::recv(c.fd, sink, sizeof sink, MSG_DONTWAIT)) > 0)
      drained += static_cast<size_t>(n);
    ::close(c.fd);
    if (auto u = users_.find(c.peer.uid); u != users_.end() && u->second.open > 0) --u->second.open;
    if (!c.privileged) --unprivileged_open_;
    clients_.erase(it);
    agent_.connection_closed(id);
  }

  Agent& agent_;
  const ServeOptions& o_;
  const Limits limits_;
  std::ostream& log_;
  const int listener_;
  int spare_fd_ = -1;
  std::map<uint64_t, Client> clients_;
  std::map<uid_t, User> users_;
  std::map<uid_t, uint64_t> last_served_;
  std::map<std::pair<uid_t, gid_t>, std::pair<double, std::vector<gid_t>>> groups_;
  uint64_t next_id_ = 1;
  size_t unprivileged_open_ = 0;
};

}  // namespace

void serve(Agent& agent, const ServeOptions& options, std::ostream& log) {
  check_limits(options.limits);
  const int listener = listen_on(options.socket_path);
  log << fmt::format("regimed: listening on {} ({} GPU(s), protocol {})\n",
                     options.socket_path.string(), agent.gpu_count(), kProtocolVersion)
      << std::flush;
  {
    Server server(agent, options, log, listener);
    server.run();
  }
  ::close(listener);
  ::unlink(options.socket_path.c_str());
}

}  // namespace regime::agent
