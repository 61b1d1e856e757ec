// regimed: the node agent. Alone on the node it changes GPU power limits, for the callers its
// policy allows, over a Unix socket (docs/agent.md).
//
//   regimed [--socket PATH] [--policy FILE] [limits, see kUsage] | --help | --version
#include <fmt/core.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <iostream>
#include <string>

#include "act/power_limit_guard.hpp"
#include "agent/agent.hpp"
#include "agent/policy.hpp"
#include "agent/server.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/version.hpp"
#include "device/nvml/nvml_gpu.hpp"
#include "device/registry.hpp"

namespace {

constexpr const char* kUsage =
    "Usage: regimed [--socket PATH] [--policy FILE] [limits]\n"
    "\n"
    "The node agent: changes GPU power limits for the callers its policy allows, journals every\n"
    "change, restores a job's caps when the job ends or its client disconnects, and restores\n"
    "what a crashed agent left on start. Protocol and policy format: docs/agent.md.\n"
    "\n"
    "  --socket PATH   where to listen (default /run/regime/regimed.sock)\n"
    "  --policy FILE   who may do what (default /etc/regime/regimed.policy)\n"
    "\n"
    "Limits on callers (docs/agent.md); root and admin lines of the policy have slots of their\n"
    "own and no rate limit:\n"
    "  --max-clients N            connections of other users, all together (default 256)\n"
    "  --reserved-clients N       more, for root and admins only (default 64)\n"
    "  --max-clients-per-user N   connections of one user (default 32)\n"
    "  --requests-per-s R         requests taken per second from one user (default 100; twice\n"
    "                             that at once)\n"
    "  --idle-timeout-s S         a connection holding no cap that sends nothing for S seconds\n"
    "                             is closed (default 5)\n"
    "\n"
    "  -h, --help      this text\n"
    "  --version       the version\n"
    "\n"
    "Environment: REGIME_NVML_LIBRARY (the NVML library), REGIME_SYSTEM_STATE_DIR (journal and\n"
    "locks instead of /var/lib/regime and /run/regime), REGIME_READ_ONLY (refuse every change).\n";

// SIGTERM or SIGINT while no cap is held: stop serving, close the socket, exit 0. While a cap is
// held the guards' own handlers take these signals: they restore every cap first (exit 143).
std::atomic<bool> stop_requested{false};
extern "C" void request_stop(int) { stop_requested.store(true); }

// The value of a limit's flag: a number within the flag's range, else Error InvalidArgument
// naming the flag.
double limit_value(const std::string& flag, const std::string& text, double lo, double hi,
                   bool whole) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const bool ok = ec == std::errc() && end == text.data() + text.size() && v >= lo && v <= hi &&
                  (!whole || v == static_cast<double>(static_cast<long long>(v)));
  if (!ok)
    throw regime::Error(regime::ErrorKind::InvalidArgument,
                        fmt::format("{} must be {} from {:g} to {:g}, not '{}'", flag,
                                    whole ? "a whole number" : "a number", lo, hi, text));
  return v;
}

// Sets one limit from its flag; false when `flag` is not a limit's.
bool set_limit(regime::agent::Limits& l, const std::string& flag, const std::string& text) {
  if (flag == "--max-clients")
    l.max_clients = static_cast<size_t>(limit_value(flag, text, 1, 100000, true));
  else if (flag == "--reserved-clients")
    l.reserved_clients = static_cast<size_t>(limit_value(flag, text, 1, 10000, true));
  else if (flag == "--max-clients-per-user")
    l.max_clients_per_user = static_cast<size_t>(limit_value(flag, text, 1, 100000, true));
  else if (flag == "--requests-per-s")
    l.request_burst = 2 * (l.requests_per_s = limit_value(flag, text, 0.1, 1e6, false));
  else if (flag == "--idle-timeout-s")
    l.idle_timeout_s = limit_value(flag, text, 0.1, 86400, false);
  else
    return false;
  return true;
}

// Raises the soft descriptor limit as far as the limits need (the hard limit allowing), and
// serves fewer connections when it cannot: past them a caller is refused with a reason, never
// left unanswered because accept() failed.
regime::agent::Limits fit_descriptor_limit(regime::agent::Limits limits, std::ostream& log) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return limits;
  const rlim_t needed = regime::agent::descriptors_needed(limits);
  if (r.rlim_cur < needed) {
    r.rlim_cur = r.rlim_max == RLIM_INFINITY ? needed : std::min(needed, r.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  regime::agent::Limits fitted =
      regime::agent::fit_to_descriptors(limits, static_cast<size_t>(r.rlim_cur));
  if (fitted.max_clients != limits.max_clients)
    log << fmt::format(
        "regimed: {} file descriptors allowed, {} needed: serving at most {} connections of "
        "users and {} more of root and admins\n",
        r.rlim_cur, needed, fitted.max_clients, fitted.reserved_clients);
  return fitted;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket = "/run/regime/regimed.sock";
  std::string policy_path = "/etc/regime/regimed.policy";
  regime::agent::Limits limits;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a == "--version") {
      std::cout << "regimed " << regime::regime_version() << "\n";
      return 0;
    }
    if ((a == "--socket" || a == "--policy") && i + 1 < argc) {
      (a == "--socket" ? socket : policy_path) = argv[++i];
      continue;
    }
    try {
      if (i + 1 < argc && set_limit(limits, a, argv[i + 1])) {
        ++i;
        continue;
      }
    } catch (const regime::Error& e) {
      std::cerr << "regimed: " << e.what() << "\n";
      return 2;
    }
    std::cerr << "regimed: unexpected argument '" << a << "'\n" << kUsage;
    return 2;
  }
  try {
    regime::agent::check_limits(limits);
  } catch (const regime::Error& e) {
    std::cerr << "regimed: " << e.what() << "\n";
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
    options.limits = fit_descriptor_limit(limits, std::cerr);
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
