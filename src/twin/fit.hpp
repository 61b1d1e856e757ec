#pragma once
// Fitting the twin's workload parameters to a few measured caps, then predicting the whole
// energy-versus-cap curve. What the workload asks of the GPU and the card's static power are
// fitted, by nonlinear least squares (Ceres) with every parameter inside physical bounds; the rest
// of the GPU's physics is the spec file's.
#include <utility>
#include <vector>

#include "twin/model.hpp"
#include "twin/spec.hpp"
#include "twin/uncertainty.hpp"

namespace regime::twin {

// One measured (or predicted) cap. time_s and avg_power_W are per unit of work (a step or an
// epoch: the fit does not assume a scale).
struct CapPoint {
  double cap_W = 0;
  double time_s = 0;
  double avg_power_W = 0;
};

struct CurveFit {
  GpuSpec gpu;                  // the spec with the fitted static power
  WorkloadParams workload;      // fitted, in the measured unit of work
  double static_power_W = 0;    // fitted, inside static_power_bounds_W(spec)
  double rms_rel_residual = 0;  // RMS of the relative time and power residuals at the fitted caps
  int points = 0;               // measured caps used
  std::vector<double> fit_caps_W;  // the measured caps, where the fit is anchored
  // Added to the interval's base: kUncalibratedFitExtraRel where the spec was not calibrated
  // across its range (calibrated_across_range), else 0.
  double interval_extra_rel = 0;
  CapPoint predict(double cap_W) const;
  // The interval of a prediction: it grows with the distance from the fitted caps, from the
  // fit's residual there (at least kFitIntervalBaseRel) plus interval_extra_rel; extrapolated
  // outside their span.
  Uncertainty uncertainty(double cap_W) const;
};

struct FitOptions {
  // Weight of the prior that holds the static power near the spec's value (on its log): the fit
  // moves it only when the points ask for it (a workload drawing less than the spec's static
  // power). Chosen on the seen part of the Zeus sweeps (docs/twin.md).
  double static_prior_weight = 1.0;
};

// Whether the spec's constants were chosen against measurements spread over at least half its
// limit range (its calibrated_caps_W): the V100 and RTX 6000 against the Zeus sweeps, the T4
// against its study table. Elsewhere the twin's physics is an estimate by analogy.
bool calibrated_across_range(const GpuSpec& gpu);

// What a fit with a spec not calibrated across its range adds to its interval's base: the 90th
// percentile of the extra error at unfitted caps when the seen half of the Zeus sweeps is fitted
// with four other cards' specs (docs/twin.md, "Where the twin is worse").
inline constexpr double kUncalibratedFitExtraRel = 0.012;

// Fits from 2 or more points with distinct caps. Error InvalidArgument for fewer points or
// non-positive times or powers.
CurveFit fit_curve(const GpuSpec& gpu, const std::vector<CapPoint>& measured,
                   const FitOptions& options = {});

// Where the fit may put the static power: the spec's static_power_W bounds.
std::pair<double, double> static_power_bounds_W(const GpuSpec& gpu);

// The checks every fit makes: 2 or more distinct caps, positive caps, times and powers. Error
// InvalidArgument naming the bad value.
void validate_cap_points(const std::vector<CapPoint>& measured);

}  // namespace regime::twin
