#include "session/sim_curve.hpp"

#include <fmt/format.h>

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

nlohmann::json to_json(const SimCurve& curve) {
  nlohmann::json points = nlohmann::json::array();
  for (const CurvePoint& p : curve.points) {
    const twin::SteadyState& s = p.state;
    const twin::Uncertainty& u = p.uncertainty;
    nlohmann::json point = {
        {"cap_W", p.cap_W},
        {"sm_MHz", s.sm_MHz},
        {"temp_C", s.temp_C},
        {"shutdown", s.shutdown},
        {"extrapolated", u.extrapolated},
        {"half_width_pct", 100 * u.half_width_rel},
        {"distance_from_calibrated_W",
         u.calibrated ? nlohmann::json(u.distance_W) : nlohmann::json(nullptr)}};
    if (s.shutdown) {
      point["time_s"] = point["avg_power_W"] = point["energy_J"] = nullptr;
      point["energy_interval_J"] = nullptr;
    } else {
      point["time_s"] = s.time_s;
      point["avg_power_W"] = s.avg_power_W;
      point["energy_J"] = s.energy_J;
      point["energy_interval_J"] = {u.lo(s.energy_J), u.hi(s.energy_J)};
    }
    points.push_back(point);
  }
  return {{"gpu", curve.gpu_model},
          {"workload", curve.workload},
          {"calibrated_caps_W", curve.calibrated_caps_W},
          {"points", points}};
}

std::string extrapolation_note(const SimCurve& curve) {
  bool any = false;
  for (const CurvePoint& p : curve.points) any = any || p.uncertainty.extrapolated;
  if (!any) return "";
  if (curve.calibrated_caps_W.empty())
    return fmt::format("* extrapolated: {} has no calibrated cap (docs/twin.md)", curve.gpu_model);
  return fmt::format(
      "* extrapolated: outside the caps the {} twin was calibrated at ({} W); +-% grows with the "
      "distance from them",
      curve.gpu_model, fmt::join(curve.calibrated_caps_W, ", "));
}

}  // namespace regime::session
