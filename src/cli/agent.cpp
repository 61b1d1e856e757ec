// regime agent request JSON [--socket PATH]: one request to the node agent, its answer printed.
// For scripts (a scheduler's prolog and epilog) and for people checking what regimed holds.
#include "cli/command.hpp"
#include "common/error.hpp"
#include "session/node/agent_request.hpp"

namespace regime::cli {

namespace {
struct AgentOptions {
  std::string request;
  std::string socket;
  bool json = false;
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
  // The answer is JSON either way: --json is taken so that every command takes it.
  req->add_flag("--json", o->json, "Machine-readable output (the only output: the answer's JSON)");
  req->callback([o, &ctx] {
    const session::AgentAnswer a = session::request_agent(o->socket, o->request);
    print_json(a.answer);
    if (a.refused) ctx.exit_status = exit_code(*a.refused);
  });
}

}  // namespace regime::cli
