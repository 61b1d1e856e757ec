#include "agent/server.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace regime::agent {

namespace fs = std::filesystem;

namespace {

// A client that does not read its answers is dropped rather than let the agent's memory grow.
constexpr size_t kMaxPendingOutBytes = 1024 * 1024;

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
  if (::listen(fd, 128) != 0) io_error("listen on " + path.string());
  return fd;
}

struct Client {
  int fd = -1;
  Peer peer;
  std::string in, out;
  bool close_after_write = false;
};

void queue(Client& c, const nlohmann::json& answer) { c.out += answer.dump() + "\n"; }

// Sends what it can without blocking; false when the client is gone.
bool flush(Client& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return c.out.size() <= kMaxPendingOutBytes;
      if (errno == EINTR) continue;
      return false;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  return true;
}

// Handles every complete line in c.in; an oversized request ends the connection.
void handle_lines(Agent& agent, uint64_t id, Client& c) {
  for (;;) {
    size_t nl = c.in.find('\n');
    if (nl == std::string::npos) {
      if (c.in.size() > kMaxRequestBytes) {
        queue(c, error_response(ErrorKind::OutOfRange,
                                fmt::format("request longer than the limit of {} bytes without a "
                                            "newline: closing the connection",
                                            kMaxRequestBytes)));
        c.in.clear();
        c.close_after_write = true;
      }
      return;
    }
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
      return;
    }
    try {
      queue(c, agent.handle(c.peer, id, parse_request(line)));
    } catch (const Error& e) {
      queue(c, error_response(e.kind(), e.what()));
    }
  }
}

}  // namespace

void serve(Agent& agent, const ServeOptions& options, std::ostream& log) {
  const int listener = listen_on(options.socket_path);
  log << fmt::format("regimed: listening on {} ({} GPU(s), protocol {})\n",
                     options.socket_path.string(), agent.gpu_count(), kProtocolVersion)
      << std::flush;
  std::map<uint64_t, Client> clients;
  uint64_t next_id = 1;
  auto drop = [&](uint64_t id) {
    auto it = clients.find(id);
    // Unread input makes close() reset the connection, which can cost the client the error
    // it has not read yet: read what is there first.
    char sink[8192];
    while (::recv(it->second.fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    ::close(it->second.fd);
    clients.erase(it);
    agent.connection_closed(id);
  };
  while (!(options.stop && options.stop->load())) {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    fds.push_back({listener, POLLIN, 0});
    for (auto& [id, c] : clients) {
      short events = POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
      ids.push_back(id);
    }
    int ready = ::poll(fds.data(), fds.size(), 200);
    if (ready < 0) {
      if (errno == EINTR) continue;
      io_error("poll");
    }
    if (ready == 0) continue;
    for (size_t k = 1; k < fds.size(); ++k) {
      const uint64_t id = ids[k - 1];
      Client& c = clients.at(id);
      bool gone = false;
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[8192];
        ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
          if (!c.close_after_write) {
            c.in.append(buf, static_cast<size_t>(n));
            handle_lines(agent, id, c);
          }
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK)) {
          gone = true;
        }
      }
      if (!gone) gone = !flush(c) || (c.close_after_write && c.out.empty());
      if (gone) drop(id);
    }
    if (fds[0].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
          ::close(fd);
          continue;
        }
        Client c;
        c.fd = fd;
        c.peer = peer_with_groups(cred.pid, cred.uid, cred.gid);
        if (clients.size() >= options.max_clients) {
          queue(c, error_response(ErrorKind::Io,
                                  fmt::format("regimed serves at most {} clients at once; try "
                                              "again later",
                                              options.max_clients)));
          flush(c);
          ::close(fd);
          continue;
        }
        clients.emplace(next_id++, std::move(c));
      }
    }
  }
  while (!clients.empty()) drop(clients.begin()->first);
  ::close(listener);
  ::unlink(options.socket_path.c_str());
}

}  // namespace regime::agent
