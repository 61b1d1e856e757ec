#pragma once
// The HTTP side of the exporter: GET /metrics answers the Prometheus text format, GET / a short
// page that links it; anything else 404, other methods 405. Served by one thread that polls every
// connection, so that slow or hostile clients cost a few kB each and never hold up a scrape: a
// request is read into a fixed buffer (line and headers at most kMaxRequestBytes, a body never),
// each connection has a deadline, and when all places are taken the oldest unanswered
// connection makes room for the newest. The address is loopback unless the user names another.
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "export/listen_address.hpp"

namespace regime::exporter {

inline constexpr size_t kMaxRequestBytes = 8192;  // request line and headers
inline constexpr size_t kMaxConnections = 256;    // at once, slow ones included
inline constexpr double kRequestDeadline_s = 5;   // to send the request; Prometheus sends at once
inline constexpr double kAnswerDeadline_s = 10;   // the whole exchange (Prometheus's timeout)

// The server thread's name (at most 15 characters, the kernel's limit).
inline constexpr const char* kServerThreadName = "regime-metrics";

// How long the server's poll waits: until the nearest connection deadline (`deadline`), or, with
// no connection open, until a client or stop() wakes it (-1): an idle exporter's server thread
// never wakes on its own.
int poll_timeout_ms(std::optional<std::chrono::steady_clock::time_point> deadline,
                    std::chrono::steady_clock::time_point now);

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  bool head = false;  // a HEAD request: the headers only
};

// The answer to the request line and headers in `request` (everything up to the blank line).
// Pure; `metrics_text` is called for GET /metrics only.
HttpAnswer answer_request(std::string_view request,
                          const std::function<std::string()>& metrics_text);
// The whole response: status line, headers (Connection: close), body.
std::string format_answer(const HttpAnswer& answer);

class MetricsServer {
 public:
  // `metrics_text` builds one answer to /metrics; it is called on the server's thread.
  explicit MetricsServer(std::function<std::string()> metrics_text);
  ~MetricsServer();  // stops
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and starts serving; Error Io naming the address when it cannot bind. Returns the port
  // bound (the one asked for, or the free one chosen for port 0).
  int start(const ListenAddress& address);
  void stop();

 private:
  void serve();
  std::function<std::string()> metrics_text_;
  int listen_fd_ = -1;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  std::thread thread_;
};

}  // namespace regime::exporter
