#pragma once
// A plain cube-law model, the yardstick the twin is compared with (docs/twin.md): power is
// idle + k (f/f_max)^3 and the clock falls until that meets the cap; time is a fixed part plus a
// clock-bound part / (f/f_max). No voltage floor, no static/dynamic split, no host gaps. It has
// as many free parameters as fit_curve's model and is fitted the same way (Ceres).
#include <vector>

#include "twin/fit.hpp"

namespace regime::twin {

struct CubeLawFit {
  double idle_W = 0;     // power at zero clock
  double dynamic_W = 0;  // k: extra power at max clock
  double fixed_s = 0;    // time per unit that does not scale with the clock
  double clock_s = 0;    // time per unit at max clock that does
  double rms_rel_residual = 0;
  CapPoint predict(double cap_W) const;
};

// Error InvalidArgument as for fit_curve.
CubeLawFit fit_cube_law(const std::vector<CapPoint>& measured);

// The planner's simple curve (plan/search.hpp fit_polynomial_curve), for sweep tables: time and
// energy per unit each a least-squares polynomial in the cap of degree min(2, points - 1). No
// physics at all: three caps fix it exactly.
struct QuadraticFit {
  std::vector<double> time_coef, energy_coef;  // in powers of cap / 1000 W
  double rms_rel_residual = 0;
  CapPoint predict(double cap_W) const;
};
QuadraticFit fit_quadratic(const std::vector<CapPoint>& measured);

}  // namespace regime::twin
