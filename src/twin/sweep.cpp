#include "twin/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "common/error.hpp"
#include "twin/baseline.hpp"

namespace regime::twin {

std::vector<double> choose_fit_caps(const std::vector<double>& sorted_caps, int n) {
  const int m = static_cast<int>(sorted_caps.size());
  if (n >= m) return sorted_caps;
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    // Share of the index range to the i-th cap: (i / (n - 1))^log2(3) puts the middle of 3 at a
    // third, the rest following the same curve.
    const double share = std::pow(static_cast<double>(i) / (n - 1), std::log2(3.0));
    int idx = static_cast<int>(std::lround(share * (m - 1)));
    if (out.empty() || out.back() != sorted_caps[idx]) out.push_back(sorted_caps[idx]);
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

namespace {

SweepFitReport fit_rows(const std::vector<SweepRow>& rows,
                        const std::function<const GpuSpec&(const std::string& gpu)>& spec_for,
                        int n_fit_caps, CurveModel curve_model, const FitOptions& options) {
  if (n_fit_caps < 2)
    throw Error(ErrorKind::InvalidArgument,
                "--fit-caps must be at least 2, got " + std::to_string(n_fit_caps));
  // workload -> gpu -> cap -> rows, in the order workloads first appear.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::map<double, std::vector<const SweepRow*>>>
      groups;
  for (const auto& r : rows) {
    auto key = std::make_pair(r.workload, r.gpu);
    if (!groups.count(key)) order.push_back(key);
    groups[key][r.cap_W].push_back(&r);
  }
  SweepFitReport report;
  std::vector<double> mapes, regrets;
  for (const auto& key : order) {
    const GpuSpec& gpu = spec_for(key.second);
    std::vector<CapPoint> measured;
    for (const auto& [cap, rs] : groups[key]) {
      CapPoint p{cap, 0, 0};
      for (const auto* r : rs) {
        p.time_s += r->time_s / static_cast<double>(rs.size());
        p.avg_power_W += r->avg_power_W / static_cast<double>(rs.size());
      }
      measured.push_back(p);
    }
    if (measured.size() < 2) continue;  // nothing to fit a curve to
    std::vector<double> caps;
    for (const auto& p : measured) caps.push_back(p.cap_W);
    WorkloadFitReport w;
    w.workload = key.first;
    w.gpu = gpu.model;
    w.fit_caps = choose_fit_caps(caps, n_fit_caps);
    std::vector<CapPoint> fit_points;
    for (const auto& p : measured)
      if (std::find(w.fit_caps.begin(), w.fit_caps.end(), p.cap_W) != w.fit_caps.end())
        fit_points.push_back(p);
    std::function<CapPoint(double)> predict;
    if (curve_model == CurveModel::Twin) {
      CurveFit fit = fit_curve(gpu, fit_points, options);
      w.rms_rel_residual = fit.rms_rel_residual;
      w.spec_calibrated = calibrated_across_range(gpu);
      predict = [fit](double cap_W) { return fit.predict(cap_W); };
    } else if (curve_model == CurveModel::CubeLaw) {
      CubeLawFit fit = fit_cube_law(fit_points);
      w.rms_rel_residual = fit.rms_rel_residual;
      predict = [fit](double cap_W) { return fit.predict(cap_W); };
    } else {
      QuadraticFit fit = fit_quadratic(fit_points);
      w.rms_rel_residual = fit.rms_rel_residual;
      predict = [fit](double cap_W) { return fit.predict(cap_W); };
    }
    w.measured = measured;
    double sum_e = 0, sum_t = 0;
    int held_out = 0;
    size_t best_pred = 0, best_meas = 0;
    for (size_t i = 0; i < measured.size(); ++i) {
      CapPoint pred = predict(measured[i].cap_W);
      w.predicted.push_back(pred);
      const double e_meas = measured[i].time_s * measured[i].avg_power_W;
      const double e_pred = pred.time_s * pred.avg_power_W;
      if (e_pred < w.predicted[best_pred].time_s * w.predicted[best_pred].avg_power_W)
        best_pred = i;
      if (e_meas < measured[best_meas].time_s * measured[best_meas].avg_power_W) best_meas = i;
      if (std::find(w.fit_caps.begin(), w.fit_caps.end(), measured[i].cap_W) != w.fit_caps.end())
        continue;
      sum_e += std::abs(e_pred - e_meas) / e_meas;
      sum_t += std::abs(pred.time_s - measured[i].time_s) / measured[i].time_s;
      ++held_out;
    }
    if (held_out > 0) {
      w.mape_energy_pct = 100.0 * sum_e / held_out;
      w.mape_time_pct = 100.0 * sum_t / held_out;
      mapes.push_back(*w.mape_energy_pct);
    }
    auto energy = [](const CapPoint& p) { return p.time_s * p.avg_power_W; };
    w.predicted_best_cap_W = measured[best_pred].cap_W;
    w.measured_best_cap_W = measured[best_meas].cap_W;
    w.best_cap_regret_pct =
        100.0 * (energy(measured[best_pred]) / energy(measured[best_meas]) - 1.0);
    regrets.push_back(w.best_cap_regret_pct);
    report.workloads.push_back(std::move(w));
  }
  if (!mapes.empty()) report.median_mape_energy_pct = median(mapes);
  if (!regrets.empty()) report.median_best_cap_regret_pct = median(regrets);
  return report;
}

}  // namespace

SweepFitReport fit_sweep(const std::vector<SweepRow>& rows,
                         const std::optional<std::string>& gpu_model, int n_fit_caps,
                         CurveModel curve_model, const FitOptions& options) {
  std::map<std::string, GpuSpec> specs;
  auto spec_for = [&](const std::string& gpu) -> const GpuSpec& {
    const std::string model = gpu_model.value_or(gpu);
    if (!specs.count(model)) specs[model] = load_gpu_spec(model);
    return specs[model];
  };
  return fit_rows(rows, spec_for, n_fit_caps, curve_model, options);
}

SweepFitReport fit_sweep_with(const std::vector<SweepRow>& rows, const GpuSpec& gpu, int n_fit_caps,
                              CurveModel curve_model, const FitOptions& options) {
  return fit_rows(
      rows, [&](const std::string&) -> const GpuSpec& { return gpu; }, n_fit_caps, curve_model,
      options);
}

}  // namespace regime::twin
