#include "control/thermal.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime::control {

ThermalParams thermal_defaults(const GpuInfo& info, std::optional<double> time_constant_s) {
  ThermalParams p;
  p.target_C = info.slowdown_temp_C ? *info.slowdown_temp_C - 5 : 80;
  p.band_C = 3;
  p.step_W = std::max(5.0, std::round(0.05 * info.default_limit_W));
  p.period_s = 5;
  p.dwell_s = time_constant_s && *time_constant_s > 0 ? *time_constant_s : 30;
  p.min_W = info.min_limit_W;
  p.max_W = info.default_limit_W;
  return p;
}

ThermalParams thermal_params(const PolicySpec& spec, const ThermalParams& d) {
  require_known_params(spec, {"target_C", "band_C", "step_W", "period_s", "dwell_s"});
  ThermalParams p = d;
  p.target_C = number_param(spec, "target_C").value_or(d.target_C);
  p.band_C = number_param(spec, "band_C").value_or(d.band_C);
  p.step_W = number_param(spec, "step_W").value_or(d.step_W);
  p.period_s = number_param(spec, "period_s").value_or(d.period_s);
  p.dwell_s = number_param(spec, "dwell_s").value_or(d.dwell_s);
  auto need = [&](bool ok, const std::string& what) {
    if (!ok)
      throw Error(ErrorKind::InvalidArgument, fmt::format("--policy {}: {}", spec.name, what));
  };
  need(p.target_C > 0 && p.target_C < 150,
       fmt::format("target_C must be in (0, 150) C, got {}", p.target_C));
  need(p.band_C > 0 && p.band_C < p.target_C,
       fmt::format("band_C must be in (0, target_C), got {}", p.band_C));
  need(p.step_W > 0 && p.step_W <= p.max_W - p.min_W + 1e-9,
       fmt::format("step_W must be in (0, {:.0f}] W (the range [min, default]), got {}",
                   p.max_W - p.min_W, p.step_W));
  need(p.period_s >= 0.1 && p.period_s <= 600,
       fmt::format("period_s must be in [0.1, 600] s, got {}", p.period_s));
  need(p.dwell_s >= p.period_s && p.dwell_s <= 3600,
       fmt::format("dwell_s must be in [period_s, 3600] s, got {}", p.dwell_s));
  return p;
}

ThermalDecision decide_thermal(const ThermalParams& p, const ThermalState& s,
                               const ControlInput& in) {
  ThermalDecision d{{}, s};
  if (!in.temp_C) {
    d.action.why = "no temperature reading in the last period";
    return d;
  }
  const double t = *in.temp_C;
  if (s.last_change_s && in.now_s - *s.last_change_s < p.dwell_s) {
    d.action.why = fmt::format("{:.1f} C: holding, {:.0f} s since the last change (dwell {:.0f} s)",
                               t, in.now_s - *s.last_change_s, p.dwell_s);
    return d;
  }
  std::optional<double> want;
  if (t > p.target_C) {
    if (in.limit_W - p.min_W < 0.5) {
      d.action.why = fmt::format("{:.1f} C above target {:.1f} C, already at the minimum {:.0f} W",
                                 t, p.target_C, p.min_W);
      return d;
    }
    want = std::max(p.min_W, in.limit_W - p.step_W);
    d.action.why = fmt::format("{:.1f} C above target {:.1f} C: lower", t, p.target_C);
  } else if (t < p.target_C - p.band_C) {
    if (p.max_W - in.limit_W < 0.5) {
      d.action.why = fmt::format("{:.1f} C below the band, at the default {:.0f} W", t, p.max_W);
      return d;
    }
    want = std::min(p.max_W, in.limit_W + p.step_W);
    d.action.why =
        fmt::format("{:.1f} C below target - band {:.1f} C: raise", t, p.target_C - p.band_C);
  } else {
    d.action.why = fmt::format("{:.1f} C within [{:.1f}, {:.1f}] C: hold", t, p.target_C - p.band_C,
                               p.target_C);
    return d;
  }
  d.action.limit_W = want;
  d.state.last_change_s = in.now_s;
  return d;
}

Action ThermalController::decide(const ControlInput& in) {
  ThermalDecision d = decide_thermal(p_, s_, in);
  s_ = d.state;
  return d.action;
}

}  // namespace regime::control
