#pragma once
// How well a search strategy does on a sweep table replayed as a device: probes used and the
// regret of the decision (energy of the chosen cap over the least energy in the table).
#include <string>
#include <vector>

#include "plan/search.hpp"
#include "trace/sweep_table.hpp"

namespace regime::plan {

struct WorkloadEvaluation {
  std::string workload;
  std::string gpu;
  int probes = 0;
  double chosen_cap_W = 0;
  double least_energy_cap_W = 0;  // of the whole table
  double best_probed_cap_W = 0;   // least energy among the caps probed
  double regret_pct = 0;          // chosen cap's energy over the table's least, in %
  bool gated = false;             // the adaptive search stopped early: no cap can bind
  bool kept_default = true;       // the decision
  bool beyond_noise = false;      // its saving lies beyond the measurement noise
  std::string reason;             // the decision's reason
};

struct EvaluationSummary {
  int workloads = 0;
  double mean_probes = 0;
  double regret_p50_pct = 0, regret_p90_pct = 0, regret_max_pct = 0;
};

// Runs `strategy` with objective energy on every (workload, gpu) of the table. `fitter_for` gives
// the adaptive search's curve for a GPU name (empty: the polynomial curve).
std::vector<WorkloadEvaluation> evaluate_strategy(
    const SweepTable& table, Strategy strategy, double noise_floor_rel = kNoiseFloorRel,
    const std::function<CurveFitter(const std::string& gpu)>& fitter_for = {});

// The same with the search settings of `settings` (second_probe_fraction, headroom_margin,
// min_probes_before_model_stop; its grid, decision inputs and fitter are set per workload).
std::vector<WorkloadEvaluation> evaluate_strategy(
    const SweepTable& table, Strategy strategy, double noise_floor_rel,
    const std::function<CurveFitter(const std::string& gpu)>& fitter_for,
    const SearchOptions& settings);

// Nearest-rank percentiles over the given evaluations.
EvaluationSummary summarize(const std::vector<WorkloadEvaluation>& evals);

}  // namespace regime::plan
