#pragma once
// Probers that measure on a device through the run loop (the edges of the plan room: they change
// limits and run work). Every limit change goes through the caller's PowerLimitGuard.
//
// One probe: set the cap, let power and clocks settle (`settle_s`), skip `warmup_steps` steps,
// then measure until the energy-per-step interval is tight enough (relative half-width <=
// `target_rel_ci` over at least `min_steps` steps) or the budget ends (`max_steps` steps or
// `max_probe_s` seconds of measuring).
#include <functional>
#include <optional>
#include <string>

#include "act/power_limit_guard.hpp"
#include "common/error.hpp"
#include "plan/probe.hpp"
#include "plan/search.hpp"
#include "run/clock.hpp"
#include "run/workload.hpp"

namespace regime::plan {

// The workload ended (or failed) before the sweep was done.
class WorkloadEnded : public Error {
 public:
  WorkloadEnded(const std::string& message, std::optional<int> status)
      : Error(ErrorKind::Internal, message), exit_status(status) {}
  std::optional<int> exit_status;
  // What regime exits with: the workload's own failing status, else 1 (it ended too early).
  int regime_exit_code() const { return exit_status && *exit_status != 0 ? *exit_status : 1; }
};

struct ProbeBudget {
  double settle_s = 5;
  int warmup_steps = 3;
  double target_rel_ci = 0.01;
  int min_steps = 10;
  int max_steps = 2000;
  double max_probe_s = 120;
  double check_period_s = 1;  // how often the interval is recomputed while measuring
};

// live: one running workload; the cap changes between windows. `run_search` receives the prober
// and returns the search's outcome; it runs while the workload runs. Throws when
// the workload ends before the search does: WorkloadEnded, naming its exit status.
SearchOutcome live_search(Gpu& gpu, Workload& workload, PowerLimitGuard& guard,
                          const ProbeBudget& budget,
                          const std::function<SearchOutcome(Prober&)>& run_search);

// restart: one run of a fresh workload per cap.
class RestartProber : public Prober {
 public:
  RestartProber(Gpu& gpu, std::function<WorkloadPtr()> make_workload, PowerLimitGuard& guard,
                ProbeBudget budget);
  ProbeResult probe(double cap_W) override;

 private:
  Gpu& gpu_;
  std::function<WorkloadPtr()> make_workload_;
  PowerLimitGuard& guard_;
  ProbeBudget budget_;
};

}  // namespace regime::plan
