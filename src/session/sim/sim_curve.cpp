#include "session/sim/sim_curve.hpp"

#include <sstream>
#include <stdexcept>

#include "common/error.hpp"
#include "common/gpu_info.hpp"
#include "twin/sim_workloads.hpp"
#include "twin/spec.hpp"

namespace regime::session {

std::vector<double> parse_caps(const std::string& list) {
  std::vector<double> caps;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      double v = std::stod(item, &used);
      if (used != item.size() || !(v > 0)) throw std::invalid_argument(item);
      caps.push_back(v);
    } catch (const std::exception&) {
      throw Error(
          ErrorKind::InvalidArgument,
          "--caps: '" + item + "' is not a positive number of watts (e.g. --caps 60,64,70)");
    }
  }
  if (caps.empty()) throw Error(ErrorKind::InvalidArgument, "--caps is empty");
  return caps;
}

SimCurve sim_curve(const std::string& gpu_model, const std::string& workload,
                   const std::string& caps) {
  const twin::GpuSpec gpu = twin::load_gpu_spec(gpu_model);
  const std::vector<double> caps_W = parse_caps(caps);
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
