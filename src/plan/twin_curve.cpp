#include "plan/twin_curve.hpp"

#include <cmath>

#include "common/error.hpp"
#include "twin/fit.hpp"

namespace regime::plan {

namespace {

class TwinCurve : public CurveModel {
 public:
  explicit TwinCurve(twin::CurveFit fit) : fit_(std::move(fit)) {}
  std::optional<PredictedPoint> predict(double cap_W) const override {
    twin::CapPoint p = fit_.predict(cap_W);
    if (!(p.time_s > 0) || !(p.avg_power_W > 0) || !std::isfinite(p.time_s)) return std::nullopt;
    const twin::Uncertainty u = fit_.uncertainty(cap_W);
    return PredictedPoint{p.time_s, p.time_s * p.avg_power_W, u.half_width_rel, u.extrapolated};
  }
  double rms_rel_residual() const override { return fit_.rms_rel_residual; }

 private:
  twin::CurveFit fit_;
};

}  // namespace

CurveFitter twin_curve_fitter(twin::GpuSpec spec) {
  return [spec = std::move(spec)](
             const std::vector<ProbeResult>& probes) -> std::unique_ptr<CurveModel> {
    if (probes.size() < 2) return nullptr;
    std::vector<twin::CapPoint> points;
    for (const auto& p : probes)
      points.push_back({p.cap_W, p.measurement.time_per_step_s, p.measurement.avg_power_W});
    return std::make_unique<TwinCurve>(twin::fit_curve(spec, points));
  };
}

CurveFitter curve_fitter_for(const std::string& gpu_name) {
  const std::optional<twin::GpuSpec> spec = twin::find_gpu_spec(gpu_name);
  return spec ? twin_curve_fitter(*spec) : CurveFitter{};
}

void configure_curve(SearchOptions& opt, const std::string& gpu_name) {
  configure_curve(opt, twin::find_gpu_spec(gpu_name));
}

void configure_curve(SearchOptions& opt, const std::optional<twin::GpuSpec>& spec) {
  opt.fitter = spec ? twin_curve_fitter(*spec) : CurveFitter{};  // the quadratic without one
  opt.second_probe_fraction = 0.25;
  opt.min_probes_before_model_stop = 3;
}

}  // namespace regime::plan
