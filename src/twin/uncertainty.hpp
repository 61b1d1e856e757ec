#pragma once
// How far to trust a twin figure: an interval that grows with the distance from the caps where
// the twin was compared with measurements (a spec's calibrated caps, or a fit's measured caps),
// and a flag for figures outside their span. The growth was chosen on the seen half of the Zeus
// sweeps and checked on the held-out half (docs/twin.md, "Uncertainty").
#include <vector>

#include "twin/spec.hpp"

namespace regime::twin {

// Half-width of the interval, relative to the figure: base + kIntervalGrowthPerRange * distance /
// (max_limit_W - min_limit_W), distance being to the nearest calibrated cap.
inline constexpr double kIntervalGrowthPerRange = 0.27;
// A fit's base half-width is at least this (its residual at the fitted caps can be ~0).
inline constexpr double kFitIntervalBaseRel = 0.02;
// Figures of a spec with no calibrated cap: this half-width, and always extrapolated.
inline constexpr double kUncalibratedRel = 0.30;
// Outside the calibrated caps' span by more than this share of the limit range: extrapolated.
inline constexpr double kExtrapolationMargin = 0.05;

struct Uncertainty {
  double half_width_rel = 0;  // of energy (and time) per unit of work
  double distance_W = 0;      // to the nearest calibrated cap (0 when none: see calibrated)
  bool calibrated = false;    // any calibrated cap at all
  bool extrapolated = false;  // outside the calibrated span (always, when none)
  double lo(double value) const { return value * (1 - half_width_rel); }
  double hi(double value) const { return value * (1 + half_width_rel); }
};

// For a figure at cap_W from a twin calibrated at `caps_W` with error base_rel there.
Uncertainty uncertainty_at(const GpuSpec& gpu, const std::vector<double>& caps_W, double base_rel,
                           double cap_W);

// For the spec's own figures (sim curve, sim devices): its calibrated_caps_W and
// calibration_error_pct.
Uncertainty spec_uncertainty(const GpuSpec& gpu, double cap_W);

}  // namespace regime::twin
