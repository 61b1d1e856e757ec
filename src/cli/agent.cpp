// regime agent request JSON [--socket PATH]: one request to the node agent, its answer printed.
// For scripts (a scheduler's prolog and epilog) and for people checking what regimed holds.
#include <iostream>

#include "agent/client.hpp"
#include "agent/protocol.hpp"
#include "cli/command.hpp"
#include "common/error.hpp"

namespace regime::cli {

namespace {
struct AgentOptions {
  std::string request;
  std::string socket;
};
}  // namespace

void add_agent(CLI::App& root, Context& ctx) {
  auto* agent = root.add_subcommand("agent", "Talk to the node agent regimed (docs/agent.md)");
  agent->require_subcommand(1);
  auto o = std::make_shared<AgentOptions>();
  auto* req = agent->add_subcommand(
      "request", "Send one request line, e.g. '{\"op\":\"report\"}'; print the answer");
  req->add_option("json", o->request, "The request: one JSON object")->required();
  req->add_option("--socket", o->socket,
                  "The agent's socket (default $REGIME_AGENT_SOCKET, else "
                  "/run/regime/regimed.sock)");
  req->callback([o, &ctx] {
    agent::AgentConnection connection(o->socket.empty() ? agent::agent_socket_path()
                                                        : std::filesystem::path(o->socket));
    nlohmann::json answer = connection.request(o->request);
    print_json(answer);
    if (!answer.value("ok", false))
      ctx.exit_status = exit_code(agent::error_kind_from_name(answer.value("kind", "internal")));
  });
}

}  // namespace regime::cli
