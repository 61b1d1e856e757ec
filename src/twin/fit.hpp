#pragma once
// Fitting the twin's workload parameters to a few measured caps, then predicting the whole
// energy-versus-cap curve. The GPU's physics (spec file) is fixed; only what the workload asks of
// the GPU is fitted, by nonlinear least squares (Ceres).
#include <vector>

#include "twin/model.hpp"
#include "twin/spec.hpp"

namespace regime::twin {

// One measured (or predicted) cap. time_s and avg_power_W are per unit of work (a step or an
// epoch: the fit does not assume a scale).
struct CapPoint {
  double cap_W = 0;
  double time_s = 0;
  double avg_power_W = 0;
};

struct CurveFit {
  GpuSpec gpu;
  WorkloadParams workload;      // fitted, in the measured unit of work
  double rms_rel_residual = 0;  // RMS of the relative time and power residuals at the fitted caps
  int points = 0;               // measured caps used
  CapPoint predict(double cap_W) const;
};

// Fits from 2 or more points with distinct caps. Error InvalidArgument for fewer points or
// non-positive times or powers.
CurveFit fit_curve(const GpuSpec& gpu, const std::vector<CapPoint>& measured);

// The checks every fit makes: 2 or more distinct caps, positive caps, times and powers. Error
// InvalidArgument naming the bad value.
void validate_cap_points(const std::vector<CapPoint>& measured);

}  // namespace regime::twin
