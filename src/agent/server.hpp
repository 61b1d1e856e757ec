#pragma once
// The node agent's socket: a Unix stream socket anyone on the node may connect to (the policy,
// not the file mode, decides what a caller may do), each caller known by SO_PEERCRED. One thread
// and poll(): requests are short, and one thread means the agent's state needs no locks. Since
// anyone may connect, the loop keeps every user within the limits of admission.hpp: connections
// per user and in all, slots kept for root and admins, requests per second, idle and unfinished
// connections closed, and one request per user in turn, so no user can hold up another's.
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <ostream>

#include "agent/admission.hpp"
#include "agent/agent.hpp"

namespace regime::agent {

struct ServeOptions {
  std::filesystem::path socket_path;
  Limits limits;  // beyond them a new connection is told why and closed
  // Set from another thread or a signal handler to stop the loop: it is checked between any two
  // requests and at least every 100 ms.
  const std::atomic<bool>* stop = nullptr;
};

// Binds the socket (refusing when another agent answers on it; a stale file is replaced), then
// serves until `stop`. Error Io when the socket cannot be made.
void serve(Agent& agent, const ServeOptions& options, std::ostream& log);

}  // namespace regime::agent
