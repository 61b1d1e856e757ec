#include "twin/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace regime::twin {

Uncertainty uncertainty_at(const GpuSpec& gpu, const std::vector<double>& caps_W, double base_rel,
                           double cap_W) {
  Uncertainty u;
  if (caps_W.empty()) {
    u.half_width_rel = kUncalibratedRel;
    u.extrapolated = true;
    return u;
  }
  u.calibrated = true;
  u.distance_W = std::numeric_limits<double>::infinity();
  for (double c : caps_W) u.distance_W = std::min(u.distance_W, std::abs(cap_W - c));
  const double range_W = std::max(1.0, gpu.max_limit_W - gpu.min_limit_W);
  u.half_width_rel = base_rel + kIntervalGrowthPerRange * u.distance_W / range_W;
  const auto [lo, hi] = std::minmax_element(caps_W.begin(), caps_W.end());
  const double margin_W = kExtrapolationMargin * range_W;
  u.extrapolated = cap_W < *lo - margin_W || cap_W > *hi + margin_W;
  return u;
}

Uncertainty spec_uncertainty(const GpuSpec& gpu, double cap_W) {
  return uncertainty_at(gpu, gpu.calibrated_caps_W, gpu.calibration_error_pct / 100.0, cap_W);
}

}  // namespace regime::twin
