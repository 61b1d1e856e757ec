#pragma once
// One job on several GPUs of one model (data parallel): the job's figures from each GPU's
// Measurement over the same window. The slowest GPU sets the step for all, and every GPU's energy
// is spent on each step, so the job's energy per step is the sum over GPUs and its time per step
// the shared steps' (with shared steps every GPU's time per step is the same; the largest is
// taken). Power stays a per-GPU figure (the cap is set per GPU and compared with per-GPU power):
// the mean over GPUs, with the p95 and the power windows of the GPU that draws the most, which a
// cap binds first. The spread between GPUs is reported beside the job's figures.
#include <nlohmann/json.hpp>
#include <vector>

#include "analysis/measurement.hpp"

namespace regime {

// How far the GPUs of one job differ at one cap.
struct GpuSpread {
  std::vector<double> energy_per_step_J;  // per GPU, in the order given
  std::vector<double> avg_power_W;
  double energy_rel = 0;  // (max - min) / mean of energy per step
  double power_W = 0;     // max - min of mean power
  int highest_gpu = 0;    // position of the GPU drawing the most
};

// Error InvalidArgument for an empty list. One Measurement comes back unchanged. The energy
// interval is the sum of the per-GPU bounds: exact when GPUs move together (a shared step time
// makes them correlated), wider than needed when they do not.
Measurement combine_data_parallel(const std::vector<Measurement>& per_gpu);

// The job's regime from its GPUs': the most constrained one, since the GPU that a limit holds
// back sets the shared step (thermal-bound, then cap-bound, headroom, underutilized, idle).
// Error InvalidArgument for an empty list.
Regime job_regime(const std::vector<Regime>& per_gpu);

GpuSpread gpu_spread(const std::vector<Measurement>& per_gpu);
nlohmann::json to_json(const GpuSpread& s);

}  // namespace regime
