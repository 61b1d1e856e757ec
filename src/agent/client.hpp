#pragma once
// The other end of the node agent's socket: one connection sending request lines and reading the
// answers, and the Gpu through which an unprivileged regime changes limits via the agent.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "device/gpu.hpp"

namespace regime::agent {

// $REGIME_AGENT_SOCKET, else /run/regime/regimed.sock.
std::filesystem::path agent_socket_path();

class AgentConnection {
 public:
  // Error Io naming the socket when nothing answers there.
  explicit AgentConnection(const std::filesystem::path& socket);
  ~AgentConnection();
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  // Sends one line and returns the answer (Error Io when the agent closes or does not answer
  // within `timeout_s`). The answer may say ok: false; see check(). A connection the agent closed
  // while no answer was due (it closes connections idle for a few seconds that hold no cap) is
  // opened again first.
  nlohmann::json request(const std::string& line, double timeout_s = 60);
  nlohmann::json request(const nlohmann::json& j, double timeout_s = 60);

 private:
  void open();
  bool closed_by_agent() const;

  std::filesystem::path socket_;
  int fd_ = -1;
  std::string pending_;
};

// Throws the agent's error (its kind, "regimed: MESSAGE") when the answer is not ok.
const nlohmann::json& check(const nlohmann::json& answer);

// Whichever way this process changes `gpu`'s limit: unchanged when it is privileged, when the GPU
// is not physical, or when no agent socket exists; else a Gpu that reads directly (reads need no
// privilege) and sends every limit change to the agent on one connection, so that the agent
// restores them when this process ends however it ends.
GpuPtr route_limit_changes(GpuPtr gpu);

}  // namespace regime::agent
