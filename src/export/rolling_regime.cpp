#include "export/rolling_regime.hpp"

#include <algorithm>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"

namespace regime::exporter {

namespace {

// A window this short is classified again every round: a small bootstrap keeps a round cheap (the
// exporter publishes the regime, not the intervals).
constexpr int kRollingResamples = 200;

}  // namespace

void RollingRegime::add(const Sample& sample, const std::vector<PowerPoint>& points) {
  trace_.samples.push_back(sample);
  for (const auto& p : points)
    if (trace_.power_points.empty() || p.t_s > trace_.power_points.back().t_s)
      trace_.power_points.push_back(p);
  const double cut_s = sample.t_s - window_s_;
  auto& s = trace_.samples;
  s.erase(s.begin(),
          std::find_if(s.begin(), s.end(), [&](const Sample& x) { return x.t_s >= cut_s; }));
  auto& pp = trace_.power_points;
  pp.erase(pp.begin(),
           std::find_if(pp.begin(), pp.end(), [&](const PowerPoint& x) { return x.t_s >= cut_s; }));
}

std::optional<RegimeReport> RollingRegime::classify(const GpuInfo& info) const {
  if (trace_.samples.size() < 2 ||
      trace_.samples.back().t_s - trace_.samples.front().t_s < kMinWindow_s)
    return std::nullopt;
  MeasureOptions opts;
  opts.use_steps = false;
  opts.detect_steady_state = false;  // the window slides: all of it is "now"
  opts.gpu = trace_.samples.back().gpu;
  opts.bootstrap.resamples = kRollingResamples;
  const Measurement m = measure(trace_, opts);
  if (!too_short_to_classify(m).empty()) return std::nullopt;
  return regime::classify(m, info);
}

}  // namespace regime::exporter
