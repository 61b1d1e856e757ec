#pragma once
// Probers that measure on a device through the run loop: they change limits (only through the
// caller's PowerLimitGuard) and run work. Search strategies (src/plan/search.hpp) see only the
// Prober interface, whether the answers come from here or from a sweep table (plan/replay.hpp).
//
// One probe: set the cap, let power and clocks settle (`settle_s`), skip `warmup_steps` steps,
// then measure until the energy-per-step interval is tight enough (relative half-width <=
// `target_rel_ci` over at least `min_steps` steps) or the budget ends (`max_steps` steps or
// `max_probe_s` seconds of measuring).
#include <functional>

#include "act/power_limit_guard.hpp"
#include "common/clock.hpp"
#include "plan/probe.hpp"
#include "run/run_loop.hpp"
#include "run/workload.hpp"

namespace regime::session {

struct ProbeBudget {
  double settle_s = 5;
  int warmup_steps = 3;
  double target_rel_ci = 0.01;
  int min_steps = 10;
  int max_steps = 2000;
  double max_probe_s = 120;
  double check_period_s = 1;  // how often the interval is recomputed while measuring
};

// live: one running workload; the cap changes between windows of one started RunLoop. Throws
// WorkloadFailed, naming the exit status, when the workload ends before a window is done.
class LiveProber : public plan::Prober {
 public:
  LiveProber(RunLoop& loop, Workload& workload, PowerLimitGuard& guard, ProbeBudget budget);
  plan::ProbeResult probe(double cap_W) override;

 private:
  RunLoop& loop_;
  Workload& workload_;
  PowerLimitGuard& guard_;
  ProbeBudget budget_;
};

// restart: one run of a fresh workload per cap.
class RestartProber : public plan::Prober {
 public:
  RestartProber(Gpu& gpu, Clock& clock, std::function<WorkloadPtr()> make_workload,
                PowerLimitGuard& guard, ProbeBudget budget);
  plan::ProbeResult probe(double cap_W) override;

 private:
  Gpu& gpu_;
  Clock& clock_;
  std::function<WorkloadPtr()> make_workload_;
  PowerLimitGuard& guard_;
  ProbeBudget budget_;
};

}  // namespace regime::session
