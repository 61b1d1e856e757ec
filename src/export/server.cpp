#include "export/server.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>

#include "common/error.hpp"

namespace regime::exporter {

namespace {

// Prometheus's own scrape timeout is 10 s by default: a client that sends nothing for 5 s is gone.
constexpr time_t kReadTimeout_s = 5;

}  // namespace

MetricsServer::MetricsServer(std::function<std::string()> metrics_text)
    : server_(std::make_unique<httplib::Server>()) {
  server_->set_read_timeout(kReadTimeout_s);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a second exporter
  // share the port silently instead of being told it is taken.
  server_->set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->Get("/metrics", [metrics_text](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "<html><head><title>regime export</title></head><body><h1>regime export</h1>"
        "<p><a href=\"/metrics\">/metrics</a>: GPU power, energy, temperature, clocks, limits, "
        "clock-event reasons and regime in the Prometheus text format.</p></body></html>\n",
        "text/html; charset=utf-8");
  });
  // Other methods on a known path (httplib answers 400 or 404 for those by itself).
  for (const char* path : {"/metrics", "/"}) {
    const auto refuse = [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("method not allowed: the exporter is read-only\n", "text/plain");
    };
    server_->Post(path, refuse);
    server_->Put(path, refuse);
    server_->Delete(path, refuse);
  }
}

MetricsServer::~MetricsServer() { stop(); }

int MetricsServer::start(const ListenAddress& address) {
  int port = address.port;
  if (port == 0)
    port = server_->bind_to_any_port(address.host);
  else if (!server_->bind_to_port(address.host, port))
    port = -1;
  if (port <= 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot listen on {}: the address is in use or not this machine's "
                            "(another exporter running? choose another port with --listen)",
                            address.to_string()));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() acts only on a running server: wait until the thread has started serving.
  for (int i = 0; i < 2000 && !server_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void MetricsServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace regime::exporter
