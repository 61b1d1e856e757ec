#include "twin/fit.hpp"

#include <ceres/ceres.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "common/error.hpp"
#include "twin/least_squares.hpp"

namespace regime::twin {

namespace {

// x[0] = log(gpu time at max clock), x[1] = logit(share of it that scales with the clock),
// x[2] = log(host time / gpu time), x[3] = log(activity), x[4] = static power at V(max) and 25 C
// in W, kept by Ceres inside the spec's static_power_W bounds (a card waiting on its host draws
// what it draws: low-power workloads pin it).
constexpr int kParams = 5;
using Params = std::array<double, kParams>;

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

WorkloadParams to_workload(const double* x) {
  WorkloadParams w;
  const double gpu_s = std::exp(x[0]);
  const double clock_share = logistic(x[1]);
  w.clock_s = gpu_s * clock_share;
  w.memory_s = gpu_s * (1.0 - clock_share);
  w.host_s = gpu_s * std::exp(x[2]);
  w.activity = std::exp(x[3]);
  w.mem_util = 0.5 * (1.0 - clock_share) + 0.2;  // memory-bound work moves more bytes
  return w;
}

// Weak priors keep the problem well posed with only 2 points (4 numbers for 5 parameters) and
// pull unidentifiable directions to typical values (the spec's static power) instead of to the
// edges.
constexpr double kPriorWeight = 0.02;
const Params kPrior = {0.0, 1.0, std::log(0.1), std::log(0.7), 0.0};

// The spec with its static power (base + leakage, in the spec's proportion) set to static_W.
void set_static_power(const GpuSpec& nominal, double static_W, GpuSpec& out) {
  const double scale = nominal.static_power_W() > 0 ? static_W / nominal.static_power_W() : 1.0;
  out.base_power_W = nominal.base_power_W * scale;
  out.leakage_power_W = nominal.leakage_power_W * scale;
}

struct Residuals {
  const GpuSpec* gpu;
  const std::vector<CapPoint>* points;
  double static_prior_weight;
  mutable GpuSpec trial;  // gpu with the trial static power (Ceres calls one at a time)

  bool operator()(const double* x, double* r) const {
    WorkloadParams w = to_workload(x);
    set_static_power(*gpu, x[4], trial);
    size_t i = 0;
    for (const auto& p : *points) {
      SteadyState s = steady_state(trial, w, p.cap_W);
      r[i++] = (s.time_s - p.time_s) / p.time_s;
      r[i++] = (s.avg_power_W - p.avg_power_W) / p.avg_power_W;
    }
    r[i++] = kPriorWeight * (x[1] - kPrior[1]);
    r[i++] = kPriorWeight * (x[2] - kPrior[2]);
    r[i++] = kPriorWeight * (x[3] - kPrior[3]);
    r[i++] = static_prior_weight * std::log(x[4] / gpu->static_power_W());
    for (size_t k = 0; k < i; ++k)
      if (!std::isfinite(r[k])) return false;
    return true;
  }
};

double rms_of_points(const GpuSpec& gpu, const WorkloadParams& w,
                     const std::vector<CapPoint>& points) {
  double sum = 0;
  for (const auto& p : points) {
    SteadyState s = steady_state(gpu, w, p.cap_W);
    double rt = (s.time_s - p.time_s) / p.time_s,
           rp = (s.avg_power_W - p.avg_power_W) / p.avg_power_W;
    sum += rt * rt + rp * rp;
  }
  return std::sqrt(sum / static_cast<double>(2 * points.size()));
}

}  // namespace

void validate_cap_points(const std::vector<CapPoint>& measured) {
  if (measured.size() < 2)
    throw Error(ErrorKind::InvalidArgument,
                "fit_curve needs at least 2 measured caps, got " + std::to_string(measured.size()));
  std::set<double> caps;
  for (const auto& p : measured) {
    if (!(p.cap_W > 0) || !(p.time_s > 0) || !(p.avg_power_W > 0))
      throw Error(ErrorKind::InvalidArgument,
                  "fit_curve: cap, time and power must be positive (cap " +
                      std::to_string(p.cap_W) + " W, time " + std::to_string(p.time_s) +
                      " s, power " + std::to_string(p.avg_power_W) + " W)");
    caps.insert(p.cap_W);
  }
  if (caps.size() < 2)
    throw Error(ErrorKind::InvalidArgument, "fit_curve needs at least 2 distinct caps");
}

std::pair<double, double> static_power_bounds_W(const GpuSpec& gpu) {
  auto it = gpu.bounds.find("static_power_W");
  if (it != gpu.bounds.end()) return it->second;
  // A spec without bounds: the static power may move by a half either way.
  return {0.5 * gpu.static_power_W(), 1.5 * gpu.static_power_W()};
}

bool calibrated_across_range(const GpuSpec& gpu) {
  if (gpu.calibrated_caps_W.size() < 2) return false;
  const auto [lo, hi] =
      std::minmax_element(gpu.calibrated_caps_W.begin(), gpu.calibrated_caps_W.end());
  return *hi - *lo >= 0.5 * (gpu.max_limit_W - gpu.min_limit_W);
}

Uncertainty CurveFit::uncertainty(double cap_W) const {
  return uncertainty_at(
      gpu, fit_caps_W, std::max(kFitIntervalBaseRel, rms_rel_residual) + interval_extra_rel, cap_W);
}

CapPoint CurveFit::predict(double cap_W) const {
  SteadyState s = steady_state(gpu, workload, cap_W);
  return {cap_W, s.time_s, s.avg_power_W};
}

CurveFit fit_curve(const GpuSpec& gpu, const std::vector<CapPoint>& measured,
                   const FitOptions& options) {
  validate_cap_points(measured);
  const auto top =
      std::max_element(measured.begin(), measured.end(),
                       [](const CapPoint& a, const CapPoint& b) { return a.cap_W < b.cap_W; });
  const double top_time_s = top->time_s;

  const int n_residuals = static_cast<int>(2 * measured.size() + 4);
  Residuals functor{&gpu, &measured, options.static_prior_weight, gpu};
  const auto [static_lo_W, static_hi_W] = static_power_bounds_W(gpu);
  // Starting inside the bounds (a spec's own value always is: the parser checks it).
  const double static_start_W = std::clamp(gpu.static_power_W(), static_lo_W, static_hi_W);
  // The workload's switching power at the top clock stays inside the dynamic-power envelope
  // (2.5 x the maximum limit, spec.hpp).
  const double max_activity = std::min(3.0, 2.5 * gpu.max_limit_W / gpu.dynamic_power_W);

  // Several starts across the clock-bound share and host share: the cap governor makes the
  // problem piecewise smooth, and a start on the wrong side of a kink can stall.
  Params best{};
  double best_cost = std::numeric_limits<double>::infinity();
  for (double clock_share : {0.3, 0.7, 0.95}) {
    for (double host_ratio : {0.03, 0.3}) {
      for (double activity : {0.4, std::min(1.0, 0.9 * max_activity)}) {
        Params x = {std::log(top_time_s / (1.0 + host_ratio)),
                    std::log(clock_share / (1.0 - clock_share)), std::log(host_ratio),
                    std::log(activity), static_start_W};
        ceres::Problem problem;
        auto* cost =
            new ceres::NumericDiffCostFunction<Residuals, ceres::CENTRAL, ceres::DYNAMIC, kParams>(
                new Residuals(functor), ceres::TAKE_OWNERSHIP, n_residuals);
        problem.AddResidualBlock(cost, nullptr, x.data());
        set_bounds(problem, x.data(),
                   {{std::log(top_time_s) - 8.0, std::log(top_time_s) + 1.0},
                    {-8.0, 8.0},
                    {-9.0, 5.0},
                    {std::log(0.02), std::log(max_activity)},
                    {static_lo_W, static_hi_W}});
        const double cost_now = solve_quietly(problem);
        if (cost_now < best_cost) {
          best_cost = cost_now;
          best = x;
        }
      }
    }
  }
  CurveFit fit;
  fit.gpu = gpu;
  set_static_power(gpu, best[4], fit.gpu);
  fit.static_power_W = best[4];
  fit.workload = to_workload(best.data());
  fit.points = static_cast<int>(measured.size());
  for (const auto& p : measured)
    if (std::find(fit.fit_caps_W.begin(), fit.fit_caps_W.end(), p.cap_W) == fit.fit_caps_W.end())
      fit.fit_caps_W.push_back(p.cap_W);
  fit.rms_rel_residual = rms_of_points(fit.gpu, fit.workload, measured);
  fit.interval_extra_rel = calibrated_across_range(gpu) ? 0.0 : kUncalibratedFitExtraRel;
  return fit;
}

}  // namespace regime::twin
