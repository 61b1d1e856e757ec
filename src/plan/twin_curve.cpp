#include "plan/twin_curve.hpp"

#include <fmt/core.h>

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
  // What PlanTwinCurve.SearchSettingsChosenOnTheSeenHalfTwinAgainstQuadratic chooses for each.
  opt.second_probe_fraction = spec ? 0.25 : 0.34;
  opt.min_probes_before_model_stop = 3;
}

CurveNote curve_note(const std::optional<twin::GpuSpec>& spec) {
  if (!spec) return CurveNote{"quadratic", "", false, 0.0};
  const bool calibrated = twin::calibrated_across_range(*spec);
  return CurveNote{"twin", spec->model, calibrated,
                   calibrated ? 0.0 : 100 * twin::kUncalibratedFitExtraRel};
}

nlohmann::json to_json(const CurveNote& note) {
  return {{"model", note.model},
          {"gpu_spec", note.gpu_spec},
          {"spec_calibrated", note.spec_calibrated},
          {"interval_extra_pct", note.interval_extra_pct}};
}

std::string to_text(const CurveNote& note) {
  if (note.model != "twin")
    return "a quadratic through the probes (the twin has no spec of this GPU)";
  if (note.spec_calibrated)
    return fmt::format(
        "the twin of {} fitted to the probes (its spec calibrated across its limit "
        "range)",
        note.gpu_spec);
  return fmt::format(
      "the twin of {} fitted to the probes, relied on less: its constants are estimates, not "
      "calibrated across its limit range, so its intervals are {:.1f} points wider and a cap it "
      "would rule out is measured more often (docs/twin.md, \"Where the twin is worse\")",
      note.gpu_spec, note.interval_extra_pct);
}

}  // namespace regime::plan
