#include "agent/client.hpp"

#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "agent/protocol.hpp"
#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"

namespace regime::agent {

namespace fs = std::filesystem;

fs::path agent_socket_path() {
  const char* v = std::getenv("REGIME_AGENT_SOCKET");
  if (v != nullptr && *v != '\0') return v;
  return "/run/regime/regimed.sock";
}

AgentConnection::AgentConnection(const fs::path& socket) : socket_(socket) { open(); }

void AgentConnection::open() {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (socket_.string().size() >= sizeof a.sun_path)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("agent socket path {} is too long", socket_.string()));
  std::strncpy(a.sun_path, socket_.c_str(), sizeof a.sun_path - 1);
  if (fd_ >= 0) ::close(fd_);
  pending_.clear();
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw Error(ErrorKind::Io, fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error(ErrorKind::Io, fmt::format("regimed does not answer on {}: {} (is it running? "
                                           "systemctl status regimed)",
                                           socket_.string(), std::strerror(e)));
  }
}

bool AgentConnection::closed_by_agent() const {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char b = 0;
  ssize_t n = ::recv(fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

AgentConnection::~AgentConnection() {
  if (fd_ >= 0) ::close(fd_);
}

nlohmann::json AgentConnection::request(const nlohmann::json& j, double timeout_s) {
  return request(j.dump(), timeout_s);
}

nlohmann::json AgentConnection::request(const std::string& line, double timeout_s) {
  if (fd_ < 0 || (pending_.empty() && closed_by_agent())) open();
  std::string out = line + "\n";
  size_t sent = 0;
  std::string send_error;
  while (sent < out.size()) {
    ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      // The agent may have refused this connection (too many open): its reason waits unread.
      send_error = fmt::format("regimed: cannot send: {}", std::strerror(errno));
      break;
    }
    sent += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string answer = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      nlohmann::json j = parse_json_or_discarded(answer);
      if (j.is_discarded() || !j.is_object() || !j.contains("ok"))
        throw Error(ErrorKind::Io, "regimed answered something that is not a response");
      return j;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw Error(ErrorKind::Io, fmt::format("regimed did not answer within {:g} s", timeout_s));
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(ErrorKind::Io, send_error.empty() ? "regimed closed the connection" : send_error);
    pending_.append(buf, static_cast<size_t>(n));
  }
}

const nlohmann::json& check(const nlohmann::json& answer) {
  if (answer.value("ok", false)) return answer;
  throw Error(error_kind_from_name(answer.value("kind", "internal")),
              "regimed: " + answer.value("error", std::string("request failed")));
}

namespace {

class AgentRoutedGpu : public Gpu {
 public:
  AgentRoutedGpu(GpuPtr inner, fs::path socket)
      : inner_(std::move(inner)), socket_(std::move(socket)) {}

  GpuInfo info() override { return inner_->info(); }
  Sample read() override { return inner_->read(); }
  std::optional<double> read_energy_J() override { return inner_->read_energy_J(); }
  std::vector<PowerPoint> drain_power_points() override { return inner_->drain_power_points(); }
  std::optional<ReasonTimes> read_reason_times() override { return inner_->read_reason_times(); }
  ReadHealth read_health() const override { return inner_->read_health(); }
  bool is_physical() const override { return inner_->is_physical(); }
  bool changes_through_agent() const override { return true; }

  double set_power_limit(double watts) override {
    // One connection for the life of this GPU: the agent ties the caps to it.
    if (!original_W_) {
      // Nothing set through the agent yet, and the GPU already there: nothing to ask.
      GpuInfo now = inner_->info();
      if (watts == now.current_limit_W) return now.enforced_limit_W;
    }
    if (!connection_) connection_.emplace(socket_);
    const std::string uuid = inner_->info().uuid;
    nlohmann::json answer;
    if (original_W_ && watts == *original_W_) {
      // Putting back what the agent found: a restore, which no bound of the policy can refuse.
      answer = check(connection_->request(nlohmann::json{{"op", "restore"}, {"gpu", uuid}}));
      return inner_->info().enforced_limit_W;
    }
    answer =
        check(connection_->request(nlohmann::json{{"op", "set"}, {"gpu", uuid}, {"cap_W", watts}}));
    if (!original_W_) original_W_ = answer.at("old_limit_W").get<double>();
    return answer.at("enforced_W").get<double>();
  }

 private:
  GpuPtr inner_;
  fs::path socket_;
  std::optional<AgentConnection> connection_;
  std::optional<double> original_W_;
};

}  // namespace

GpuPtr route_limit_changes(GpuPtr gpu) {
  if (running_privileged() || !gpu->is_physical()) return gpu;
  fs::path socket = agent_socket_path();
  struct stat st {};
  if (::stat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return gpu;
  return std::make_unique<AgentRoutedGpu>(std::move(gpu), std::move(socket));
}

}  // namespace regime::agent
