// regimed: the node agent. Alone on the node it changes GPU power limits, for the callers its
// policy allows, over a Unix socket (docs/agent.md).
//
//   regimed [--socket PATH] [--policy FILE] [limits] | --help | --version
#include <fmt/core.h>
#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
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

constexpr const char* kDescription =
    "regimed: the node agent. Changes GPU power limits for the callers its policy allows,\n"
    "journals every change, restores a job's caps when the job ends or its client disconnects,\n"
    "and restores what a crashed agent left on start. Protocol and policy format: docs/agent.md.";

constexpr const char* kFooter =
    "Limits on callers (docs/agent.md): root and admin lines of the policy have slots of their\n"
    "own and no rate limit.\n"
    "\n"
    "Environment: REGIME_NVML_LIBRARY (the NVML library), REGIME_SYSTEM_STATE_DIR (journal and\n"
    "locks instead of /var/lib/regime and /run/regime), REGIME_READ_ONLY (refuse every change).";

// SIGTERM or SIGINT while no cap is held: stop serving, close the socket, exit 0. While a cap is
// held the guards' own handlers take these signals: they restore every cap first (exit 143).
std::atomic<bool> stop_requested{false};
extern "C" void request_stop(int) { stop_requested.store(true); }

// A number as typed: whole numbers in digits (1000000, not 1e+06).
std::string number_text(double v) {
  return v == static_cast<double>(static_cast<long long>(v)) ? fmt::format("{:.0f}", v)
                                                             : fmt::format("{:g}", v);
}

struct Range {
  double lo, hi;
  bool whole;
};

// A limit's check: a decimal number within the range; CLI11 names the flag.
CLI::Validator limit_in(Range r) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        const bool ok = ec == std::errc() && end == text.data() + text.size() && v >= r.lo &&
                        v <= r.hi &&
                        (!r.whole || v == static_cast<double>(static_cast<long long>(v)));
        if (ok) return "";
        return fmt::format("must be {} from {} to {}, not '{}'",
                           r.whole ? "a whole number" : "a number", number_text(r.lo),
                           number_text(r.hi), text);
      },
      "");
}

// A limit's option: its range and default in its description, set into `value`.
template <typename T>
void add_limit(CLI::App& app, const std::string& name, T& value, const std::string& what, Range r) {
  app.add_option(name, value,
                 fmt::format("{} ({} to {}; default {})", what, number_text(r.lo),
                             number_text(r.hi), number_text(static_cast<double>(value))))
      ->option_text(r.whole ? "N" : "X")
      ->check(limit_in(r));
}

// The options, in the order --help lists them.
void add_options(CLI::App& app, std::string& socket, std::string& policy,
                 regime::agent::Limits& limits, double& requests_per_s) {
  app.add_option("--socket", socket, "Where to listen (default " + socket + ")")
      ->option_text("PATH");
  app.add_option("--policy", policy, "Who may do what (default " + policy + ")")
      ->option_text("FILE");
  add_limit(app, "--max-clients", limits.max_clients, "Connections of other users, all together",
            {1, 100000, true});
  add_limit(app, "--reserved-clients", limits.reserved_clients,
            "More connections, for root and admins only", {1, 10000, true});
  add_limit(app, "--max-clients-per-user", limits.max_clients_per_user,
            "Connections of one user (at most --max-clients)", {1, 100000, true});
  add_limit(app, "--requests-per-s", requests_per_s,
            "Requests taken per second from one user, twice that at once", {0.1, 1e6, false});
  add_limit(app, "--idle-timeout-s", limits.idle_timeout_s,
            "Seconds a connection holding no cap may send nothing before it is closed",
            {0.1, 86400, false});
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
  double requests_per_s = limits.requests_per_s;
  CLI::App app{kDescription, "regimed"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("regimed ") + regime::regime_version());
  add_options(app, socket, policy_path, limits, requests_per_s);
  try {
    app.parse(argc, argv);
    limits.requests_per_s = requests_per_s;
    limits.request_burst = 2 * requests_per_s;
    regime::agent::check_limits(limits);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::cerr << "regimed: usage: " << e.what() << " (regimed --help lists the options)\n";
    return 2;
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
