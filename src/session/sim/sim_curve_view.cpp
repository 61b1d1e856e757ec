#include "session/sim/sim_curve_view.hpp"

#include <fmt/format.h>

#include <iterator>

#include "session/sim/sim_curve.hpp"

namespace regime::session {

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

std::string to_text(const SimCurve& curve) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{} on {} ({}), per step\n", curve.workload, curve.gpu_name, curve.gpu_model);
  fmt::format_to(to, "{:>8} {:>10} {:>10} {:>10} {:>7} {:>8} {:>7} {:>6}  {}\n", "cap W", "time ms",
                 "power W", "energy J", "+-%", "SM MHz", "temp C", "util%", "limited by");
  for (const CurvePoint& p : curve.points) {
    const auto& s = p.state;
    if (s.shutdown) {
      fmt::format_to(to, "{:>8.1f}  shuts down: the die reaches its shutdown temperature {} C\n",
                     p.cap_W, curve.shutdown_temp_C);
      continue;
    }
    fmt::format_to(to,
                   "{:>8.1f} {:>10.3f} {:>10.1f} {:>10.3f} {:>6.0f}{} {:>8.0f} {:>7.1f} {:>6.1f}  "
                   "{}\n",
                   p.cap_W, 1e3 * s.time_s, s.avg_power_W, s.energy_J,
                   100 * p.uncertainty.half_width_rel, p.uncertainty.extrapolated ? "*" : " ",
                   s.sm_MHz, s.temp_C, s.util_pct, p.limited_by);
  }
  if (const std::string note = extrapolation_note(curve); !note.empty()) out += note + "\n";
  return out;
}

}  // namespace regime::session
