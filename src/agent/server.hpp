#pragma once
// The node agent's socket: a Unix stream socket anyone on the node may connect to (the policy,
// not the file mode, decides what a caller may do), each caller known by SO_PEERCRED. One thread
// and poll(): requests are short, and one thread means the agent's state needs no locks.
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <ostream>

#include "agent/agent.hpp"

namespace regime::agent {

struct ServeOptions {
  std::filesystem::path socket_path;
  size_t max_clients = 256;  // beyond: a new client is told so and closed
  // Set from another thread or a signal handler's pipe to stop the loop (tests).
  const std::atomic<bool>* stop = nullptr;
};

// Binds the socket (refusing when another agent answers on it; a stale file is replaced), then
// serves until `stop`. Error Io when the socket cannot be made.
void serve(Agent& agent, const ServeOptions& options, std::ostream& log);

}  // namespace regime::agent
