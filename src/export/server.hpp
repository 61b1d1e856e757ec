#pragma once
// The HTTP side of the exporter: GET /metrics answers the Prometheus text format, GET / a short
// page that links it; anything else 404 (405 for other methods). Served by cpp-httplib on its own
// threads; the address is loopback unless the user names another.
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "export/listen_address.hpp"

namespace httplib {
class Server;
}

namespace regime::exporter {

class MetricsServer {
 public:
  // `metrics_text` builds one answer to /metrics; it is called on the server's threads.
  explicit MetricsServer(std::function<std::string()> metrics_text);
  ~MetricsServer();  // stops
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and starts serving; Error Io naming the address when it cannot bind. Returns the port
  // bound (the one asked for, or the free one chosen for port 0).
  int start(const ListenAddress& address);
  void stop();

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace regime::exporter
