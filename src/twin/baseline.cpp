#include "twin/baseline.hpp"

#include <ceres/ceres.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.hpp"
#include "twin/least_squares.hpp"

namespace regime::twin {

namespace {

// x[0] = log idle W, x[1] = log k W, x[2] = log time at max clock, x[3] = logit clock share.
CubeLawFit from_params(const double* x) {
  CubeLawFit f;
  f.idle_W = std::exp(x[0]);
  f.dynamic_W = std::exp(x[1]);
  const double t = std::exp(x[2]), share = 1.0 / (1.0 + std::exp(-x[3]));
  f.clock_s = t * share;
  f.fixed_s = t * (1.0 - share);
  return f;
}

struct CubeResiduals {
  const std::vector<CapPoint>* points;
  bool operator()(const double* x, double* r) const {
    CubeLawFit f = from_params(x);
    size_t i = 0;
    for (const auto& p : *points) {
      CapPoint q = f.predict(p.cap_W);
      r[i++] = (q.time_s - p.time_s) / p.time_s;
      r[i++] = (q.avg_power_W - p.avg_power_W) / p.avg_power_W;
    }
    for (size_t k = 0; k < i; ++k)
      if (!std::isfinite(r[k])) return false;
    return true;
  }
};

}  // namespace

CapPoint CubeLawFit::predict(double cap_W) const {
  double f_rel = 1.0;
  if (idle_W + dynamic_W > cap_W) f_rel = std::cbrt(std::max(0.0, cap_W - idle_W) / dynamic_W);
  f_rel = std::clamp(f_rel, 0.05, 1.0);
  return {cap_W, fixed_s + clock_s / f_rel, idle_W + dynamic_W * f_rel * f_rel * f_rel};
}

CubeLawFit fit_cube_law(const std::vector<CapPoint>& measured) {
  validate_cap_points(measured);
  const auto top = *std::max_element(measured.begin(), measured.end(),
                                     [](auto& a, auto& b) { return a.cap_W < b.cap_W; });
  const int n_residuals = static_cast<int>(2 * measured.size());
  double best[4] = {0, 0, 0, 0};
  double best_cost = std::numeric_limits<double>::infinity();
  for (double idle_share : {0.15, 0.4}) {
    for (double clock_share : {0.3, 0.8}) {
      double x[4] = {std::log(idle_share * top.avg_power_W),
                     std::log((1.0 - idle_share) * top.avg_power_W), std::log(top.time_s),
                     std::log(clock_share / (1.0 - clock_share))};
      ceres::Problem problem;
      problem.AddResidualBlock(
          new ceres::NumericDiffCostFunction<CubeResiduals, ceres::CENTRAL, ceres::DYNAMIC, 4>(
              new CubeResiduals{&measured}, ceres::TAKE_OWNERSHIP, n_residuals),
          nullptr, x);
      const double power_lo = std::log(1e-3 * top.avg_power_W);
      const double power_hi = std::log(1e2 * top.avg_power_W);
      set_bounds(problem, x,
                 {{power_lo, power_hi},
                  {power_lo, power_hi},
                  {std::log(top.time_s) - 5.0, std::log(top.time_s) + 2.0},
                  {-8.0, 8.0}});
      const double cost_now = solve_quietly(problem);
      if (cost_now < best_cost) {
        best_cost = cost_now;
        std::copy(x, x + 4, best);
      }
    }
  }
  CubeLawFit fit = from_params(best);
  fit.rms_rel_residual = std::sqrt(2.0 * best_cost / n_residuals);
  return fit;
}

namespace {

// Caps in kW keep the normal equations well conditioned.
double eval_poly(const std::vector<double>& c, double cap_W) {
  double x = cap_W / 1000, v = 0, xn = 1;
  for (double k : c) {
    v += k * xn;
    xn *= x;
  }
  return v;
}

}  // namespace

CapPoint QuadraticFit::predict(double cap_W) const {
  const double t = eval_poly(time_coef, cap_W), e = eval_poly(energy_coef, cap_W);
  return {cap_W, t, t > 0 ? e / t : 0.0};
}

QuadraticFit fit_quadratic(const std::vector<CapPoint>& measured) {
  validate_cap_points(measured);
  const auto n = static_cast<Eigen::Index>(measured.size());
  const Eigen::Index degree = std::min<Eigen::Index>(2, n - 1);
  Eigen::MatrixXd a(n, degree + 1);
  Eigen::VectorXd t(n), e(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    double x = measured[i].cap_W / 1000, xn = 1;
    for (Eigen::Index j = 0; j <= degree; ++j, xn *= x) a(i, j) = xn;
    t[i] = measured[i].time_s;
    e[i] = measured[i].time_s * measured[i].avg_power_W;
  }
  auto qr = a.colPivHouseholderQr();
  Eigen::VectorXd tc = qr.solve(t), ec = qr.solve(e);
  QuadraticFit fit;
  fit.time_coef.assign(tc.data(), tc.data() + tc.size());
  fit.energy_coef.assign(ec.data(), ec.data() + ec.size());
  double ss = 0;
  for (const auto& p : measured) {
    const CapPoint q = fit.predict(p.cap_W);
    const double rt = q.time_s / p.time_s - 1,
                 re = q.time_s * q.avg_power_W / (p.time_s * p.avg_power_W) - 1;
    ss += rt * rt + re * re;
  }
  fit.rms_rel_residual = std::sqrt(ss / static_cast<double>(2 * measured.size()));
  return fit;
}

}  // namespace regime::twin
