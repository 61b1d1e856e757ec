#include "export/server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <list>
#include <vector>

#include "common/error.hpp"

namespace regime::exporter {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kListenBacklog = 128;
constexpr size_t kReadChunkBytes = 4096;

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Reading the request, writing the answer, then reading what the client still sends until it
// closes (closing at once with unread bytes would reset the connection, and the client could
// lose the answer).
enum class Phase { Reading, Writing, Draining };

struct Connection {
  int fd = -1;
  Phase phase = Phase::Reading;
  Clock::time_point request_by;  // the request must be in by then
  Clock::time_point done_by;     // and the answer sent and the client gone
  std::string request;           // at most kMaxRequestBytes
  std::string answer;
  size_t sent = 0;
  size_t drained = 0;
  Clock::time_point deadline() const { return phase == Phase::Reading ? request_by : done_by; }
};

// Bytes read and dropped after the answer before the connection is closed regardless.
constexpr size_t kMaxDrainBytes = 64 * 1024;

// Where the request line and headers end (just past the blank line), or npos.
size_t end_of_headers(std::string_view text) {
  const size_t crlf = text.find("\r\n\r\n");
  const size_t lf = text.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::string_view::npos;
  return std::min(crlf == std::string_view::npos ? std::string_view::npos : crlf + 4,
                  lf == std::string_view::npos ? std::string_view::npos : lf + 2);
}

std::string_view reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

HttpAnswer plain(int status, std::string text) {
  return {status, "text/plain; charset=utf-8", std::move(text), false};
}

}  // namespace

int poll_timeout_ms(std::optional<std::chrono::steady_clock::time_point> deadline,
                    std::chrono::steady_clock::time_point now) {
  if (!deadline) return -1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now).count();
  // One more millisecond: poll rounds down, and a wake just before the deadline would be wasted.
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000)) + 1;
}

HttpAnswer answer_request(std::string_view request,
                          const std::function<std::string()>& metrics_text) {
  const size_t eol = request.find('\n');
  std::string_view line = request.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/", 0) != 0)
    return plain(400, "bad request line\n");
  const std::string_view method = line.substr(0, sp1);
  std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") {
    HttpAnswer a = plain(405, "method not allowed: the exporter is read-only\n");
    return a;
  }
  HttpAnswer a;
  a.head = method == "HEAD";
  if (path == "/metrics") {
    a.content_type = "text/plain; version=0.0.4; charset=utf-8";
    a.body = metrics_text();
  } else if (path == "/") {
    a.content_type = "text/html; charset=utf-8";
    a.body =
        "<html><head><title>regime export</title></head><body><h1>regime export</h1>"
        "<p><a href=\"/metrics\">/metrics</a>: GPU power, energy, temperature, clocks, limits, "
        "clock-event reasons and regime in the Prometheus text format.</p></body></html>\n";
  } else {
    a = plain(404, "not found: the exporter serves /metrics\n");
    a.head = method == "HEAD";
  }
  return a;
}

std::string format_answer(const HttpAnswer& a) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n", a.status,
      reason(a.status), a.content_type, a.body.size());
  if (a.status == 405) out += "Allow: GET, HEAD\r\n";
  out += "\r\n";
  if (!a.head) out += a.body;
  return out;
}

MetricsServer::MetricsServer(std::function<std::string()> metrics_text)
    : metrics_text_(std::move(metrics_text)) {}

MetricsServer::~MetricsServer() { stop(); }

int MetricsServer::start(const ListenAddress& address) {
  const auto cannot = [&] {
    return Error(ErrorKind::Io,
                 fmt::format("cannot listen on {}: the address is in use or not this machine's "
                             "(another exporter running? choose another port with --listen)",
                             address.to_string()));
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(address.port);
  if (::getaddrinfo(address.host.c_str(), port_text.c_str(), &hints, &found) != 0) throw cannot();
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second exporter share the port silently
    // instead of being told it is taken.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) throw cannot();
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    throw Error(ErrorKind::Io, "cannot make the exporter's wake-up pipe");
  }
  listen_fd_ = fd;
  wake_read_fd_ = wake[0];
  wake_write_fd_ = wake[1];
  thread_ = std::thread([this] {
    // Named, so that `top -H` and /proc tell the server's thread from the round loop's.
    ::pthread_setname_np(::pthread_self(), kServerThreadName);
    serve();
  });
  return port;
}

void MetricsServer::stop() {
  if (!thread_.joinable()) return;
  const char byte = 1;
  [[maybe_unused]] const auto n = ::write(wake_write_fd_, &byte, 1);
  thread_.join();
  // Closed, not only unserved: a client connecting now is refused instead of left waiting.
  for (int* fd : {&listen_fd_, &wake_read_fd_, &wake_write_fd_}) {
    ::close(*fd);
    *fd = -1;
  }
}

void MetricsServer::serve() {
  std::list<Connection> connections;  // oldest first
  const auto close_connection = [&](std::list<Connection>::iterator it) {
    ::close(it->fd);
    return connections.erase(it);
  };
  std::vector<pollfd> polled;
  std::vector<std::list<Connection>::iterator> polled_connections;
  char chunk[kReadChunkBytes];
  for (;;) {
    polled.clear();
    polled_connections.clear();
    polled.push_back({wake_read_fd_, POLLIN, 0});
    polled.push_back({listen_fd_, POLLIN, 0});
    std::optional<Clock::time_point> next_deadline;
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      polled.push_back(
          {it->fd, static_cast<short>(it->phase == Phase::Writing ? POLLOUT : POLLIN), 0});
      polled_connections.push_back(it);
      next_deadline = std::min(next_deadline.value_or(it->deadline()), it->deadline());
    }
    if (::poll(polled.data(), polled.size(), poll_timeout_ms(next_deadline, Clock::now())) < 0 &&
        errno != EINTR)
      break;
    if (polled[0].revents != 0) break;  // stop()
    for (size_t i = 2; i < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      auto it = polled_connections[i - 2];
      if (it->phase == Phase::Reading) {
        const size_t room = kMaxRequestBytes - it->request.size();
        const ssize_t n = ::recv(it->fd, chunk, std::min(room + 1, sizeof chunk), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          close_connection(it);
          continue;
        }
        if (n < 0) continue;
        it->request.append(chunk, static_cast<size_t>(n));
        const size_t end = end_of_headers(it->request);
        if (end != std::string::npos) {
          it->answer = format_answer(answer_request(it->request.substr(0, end), metrics_text_));
        } else if (it->request.size() > kMaxRequestBytes) {
          it->answer = format_answer(plain(
              431, fmt::format("request line and headers over {} bytes\n", kMaxRequestBytes)));
        }
        if (!it->answer.empty()) {
          it->phase = Phase::Writing;
          std::string().swap(it->request);
        }
      } else if (it->phase == Phase::Writing) {
        const ssize_t n = ::send(it->fd, it->answer.data() + it->sent, it->answer.size() - it->sent,
                                 MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) {
          close_connection(it);
          continue;
        }
        it->sent += static_cast<size_t>(n);
        if (it->sent == it->answer.size()) {
          std::string().swap(it->answer);
          ::shutdown(it->fd, SHUT_WR);
          it->phase = Phase::Draining;
        }
      } else {
        const ssize_t n = ::recv(it->fd, chunk, sizeof chunk, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n > 0) it->drained += static_cast<size_t>(n);
        if (n <= 0 || it->drained > kMaxDrainBytes) close_connection(it);
      }
    }
    // Deadlines: a client that sends its request too slowly, or reads the answer too slowly.
    const auto now = Clock::now();
    for (auto it = connections.begin(); it != connections.end();)
      it = now >= it->deadline() ? close_connection(it) : std::next(it);
    if (polled[1].revents != 0) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (connections.size() >= kMaxConnections) {
          // Full: one answered already makes room, else the oldest still sending its request (a
          // slow client, most likely), else the oldest of all.
          auto in = [&](Phase phase) {
            return std::find_if(connections.begin(), connections.end(),
                                [phase](const Connection& c) { return c.phase == phase; });
          };
          auto evicted = in(Phase::Draining);
          if (evicted == connections.end()) evicted = in(Phase::Reading);
          if (evicted == connections.end()) evicted = connections.begin();
          close_connection(evicted);
        }
        Connection c;
        c.fd = fd;
        c.request_by = after(kRequestDeadline_s);
        c.done_by = after(kAnswerDeadline_s);
        connections.push_back(std::move(c));
      }
    }
  }
  for (auto& c : connections) ::close(c.fd);
}

}  // namespace regime::exporter
