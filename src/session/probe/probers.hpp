#pragma once
// Probers that measure on a device through the run loop: they change limits (only through the
// caller's PowerLimitGuard) and run work. Search strategies (src/plan/search.hpp) see only the
// Prober interface, whether the answers come from here or from a sweep table (plan/replay.hpp).
//
// One probe: set the cap, let temperature and power settle (their slopes over the last
// `settle_window_s` flat within the tolerances, at least `settle_s` after the change and at most
// `max_settle_s`), skip `warmup_steps` steps, then measure until the energy-per-step interval is
// tight enough (relative half-width <= `target_rel_ci` over at least `min_steps` steps) or the
// budget ends (`max_steps` steps or `max_probe_s` seconds of measuring). A card that never settles
// within `max_settle_s` is measured anyway, and the probe says so (ProbeResult::note).
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "common/clock.hpp"
#include "plan/probe.hpp"
#include "run/run_loop.hpp"
#include "run/workload.hpp"

namespace regime::session {

struct ProbeBudget {
  double settle_s = 5;  // the least time after a cap change (the governor and clocks follow)
  // Settled: over the last settle_window_s, temperature moves under temp_slope_C_per_min and
  // mean power under power_slope_rel_per_min. A thermal RC with time constant tau then lies
  // within slope x tau of its end: 0.5 C/min leaves a third of a degree on a 40 s card.
  double max_settle_s = 300;
  double settle_window_s = 10;
  double temp_slope_C_per_min = 0.5;
  double power_slope_rel_per_min = 0.005;
  int warmup_steps = 3;
  double target_rel_ci = 0.01;
  int min_steps = 10;
  int max_steps = 2000;
  double max_probe_s = 120;
  double check_period_s = 1;  // how often the interval is recomputed while measuring
  // Without step markers the work done is unknown, and energy per second rewards a cap that
  // slows the job: such a window is refused (NoStepMarkers) unless this accepts it.
  bool accept_per_second = false;
  // On a job of phases (a cycle of them found while the card would not settle), judge settling
  // cycle against cycle and measure whole cycles, so every cap's window holds the same mix.
  bool whole_cycles = true;
};

// The message of a sweep refused for want of step markers: how to add them, and the flag that
// accepts per-second figures instead.
std::string no_step_markers_message(const std::string& workload, double window_s);

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

// live: one running workload; the cap changes between windows of one started RunLoop, on every
// GPU the loop samples (one GPU, or every GPU of one data-parallel job): each GPU is measured
// over the same window and the job's figures (energy summed, the shared step time; one GPU's own)
// go to the search. Each GPU's own figures are kept per cap. Throws WorkloadFailed, naming the
// exit status, when the workload ends before a window is done.
class LiveProber : public plan::Prober {
 public:
  // The cap reaches every GPU through `set_all` (the guards of a sweep, or a scheduler job's
  // caps through the node agent or the journal: session/scheduler/job.hpp's JobCaps).
  LiveProber(RunLoop& loop, Workload& workload, std::function<void(double)> set_all,
             ProbeBudget budget);
  plan::ProbeResult probe(double cap_W) override;
  // cap -> each GPU's Measurement at that cap (the first probe of the cap, as in the results).
  const std::map<double, std::vector<Measurement>>& per_gpu() const { return per_gpu_; }
  // The cycle of a job of phases its windows follow; nullopt for a steady job.
  std::optional<double> cycle_s() const { return cycle_s_; }
  size_t gpu_count() const { return loop_.gpu_count(); }
  const Trace& trace(size_t i) const { return loop_.trace(i); }

 private:
  RunLoop& loop_;
  Workload& workload_;
  std::function<void(double)> set_all_;
  ProbeBudget budget_;
  std::map<double, std::vector<Measurement>> per_gpu_;
  std::optional<double> cycle_s_;
};

}  // namespace regime::session
