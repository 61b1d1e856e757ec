#include "session/sim/sim_curve.hpp"

#include <fmt/core.h>

#include <optional>

#include "common/error.hpp"
#include "common/gpu_info.hpp"
#include "plan/cap_grid.hpp"
#include "twin/sim_workloads.hpp"
#include "twin/spec.hpp"

namespace regime::session {

SimCurve sim_curve(const std::string& gpu_model, const std::string& workload,
                   const std::vector<double>& caps_W) {
  const twin::GpuSpec gpu = twin::load_gpu_spec(gpu_model);
  for (double c : caps_W)
    check_cap_in_range(c, gpu.min_limit_W, gpu.max_limit_W, "sim:" + gpu.model);
  const twin::SimWorkloadProfile profile = twin::sim_workload_profile(workload);
  const twin::WorkloadParams w = twin::workload_on(profile, gpu);
  SimCurve out{gpu.model, gpu.name, profile.name, gpu.shutdown_temp_C, gpu.calibrated_caps_W, {}};
  for (double c : caps_W) {
    const twin::SteadyState s = twin::steady_state(gpu, w, c);
    out.points.push_back({c, s, twin::spec_uncertainty(gpu, c), twin::describe_reasons(s.reasons)});
  }
  return out;
}

}  // namespace regime::session
