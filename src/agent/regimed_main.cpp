// regimed: the node agent. Alone on the node it changes GPU power limits, for the callers its
// policy allows, over a Unix socket (docs/agent.md).
//
//   regimed [--socket PATH] [--policy FILE]
#include <fmt/core.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <string>

#include "act/power_limit_guard.hpp"
#include "agent/agent.hpp"
#include "agent/policy.hpp"
#include "agent/server.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "device/nvml/nvml_gpu.hpp"
#include "device/registry.hpp"

namespace {

constexpr const char* kUsage =
    "Usage: regimed [--socket PATH] [--policy FILE]\n"
    "\n"
    "The node agent: changes GPU power limits for the callers its policy allows, journals every\n"
    "change, restores a job's caps when the job ends or its client disconnects, and restores\n"
    "what a crashed agent left on start. Protocol and policy format: docs/agent.md.\n"
    "\n"
    "  --socket PATH   where to listen (default /run/regime/regimed.sock)\n"
    "  --policy FILE   who may do what (default /etc/regime/regimed.policy)\n"
    "\n"
    "Environment: REGIME_NVML_LIBRARY (the NVML library), REGIME_SYSTEM_STATE_DIR (journal and\n"
    "locks instead of /var/lib/regime and /run/regime), REGIME_READ_ONLY (refuse every change).\n";

// SIGTERM or SIGINT while no cap is held: stop serving, close the socket, exit 0. While a cap is
// held the guards' own handlers take these signals: they restore every cap first (exit 143).
std::atomic<bool> stop_requested{false};
extern "C" void request_stop(int) { stop_requested.store(true); }

}  // namespace

int main(int argc, char** argv) {
  std::string socket = "/run/regime/regimed.sock";
  std::string policy_path = "/etc/regime/regimed.policy";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if ((a == "--socket" || a == "--policy") && i + 1 < argc) {
      (a == "--socket" ? socket : policy_path) = argv[++i];
      continue;
    }
    std::cerr << "regimed: unexpected argument '" << a << "'\n" << kUsage;
    return 2;
  }
  try {
    regime::register_backend(regime::nvml::backend());
    regime::agent::Policy policy = regime::agent::load_policy(policy_path);
    // Whatever a killed agent (or a killed regime) left capped comes back before anything new.
    regime::restore_dead_leftovers(std::cerr);
    std::vector<regime::GpuPtr> gpus = regime::open_devices("nvml:all");
    regime::ActuationPolicy actuation = regime::ActuationPolicy::from_flags(true);
    regime::agent::Agent agent(std::move(policy), std::move(gpus), actuation, std::cerr);
    // Beside the journal: /var/lib/regime/agent-jobs.json (REGIME_SYSTEM_STATE_DIR in tests).
    agent.keep_jobs_in(regime::journal_dirs().journal.parent_path() / "agent-jobs.json");
    regime::agent::ServeOptions options;
    options.socket_path = socket;
    options.stop = &stop_requested;
    struct sigaction sa {};
    sa.sa_handler = request_stop;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    regime::agent::serve(agent, options, std::cerr);
  } catch (const regime::Error& e) {
    std::cerr << "regimed: " << e.what() << "\n";
    return regime::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "regimed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
