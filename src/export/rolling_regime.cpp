#include "export/rolling_regime.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "analysis/phases.hpp"

namespace regime::exporter {

namespace {

// A window this short is classified again every round: a small bootstrap keeps a round cheap (the
// exporter publishes the regime, not the intervals).
constexpr int kRollingResamples = 200;

template <class T>
void drop_before(std::vector<T>& v, double cut_s) {
  v.erase(v.begin(), std::find_if(v.begin(), v.end(), [&](const T& x) { return x.t_s >= cut_s; }));
}

// The cycle's period over the whole history: from the first to the last start of the kind that
// began most often, the history's first span left out (the history cuts it, so its start is not
// where the phase began). The finder's period is a median of single periods, each placed to a
// block or two; this one spreads that error over every cycle kept.
std::optional<double> history_cycle_s(const PhaseSegmentation& seg) {
  if (!seg.cycle_s || seg.kinds() < 2) return std::nullopt;
  std::optional<double> best;
  size_t best_starts = 0;
  for (int k = 0; k < seg.kinds(); ++k) {
    std::vector<double> starts;
    for (size_t i = 1; i < seg.spans.size(); ++i)
      if (seg.spans[i].kind == k) starts.push_back(seg.spans[i].t0_s);
    if (starts.size() < 2 || starts.size() <= best_starts) continue;
    best_starts = starts.size();
    best = (starts.back() - starts.front()) / static_cast<double>(starts.size() - 1);
  }
  return best ? best : seg.cycle_s;
}

}  // namespace

double phased_window_s(double window_s, std::optional<double> cycle_s, double available_s) {
  if (!cycle_s || !(*cycle_s > 0)) return window_s;
  const double wanted = std::max(2.0, std::ceil(window_s / *cycle_s - 1e-9));
  // The blocks place a cycle's boundaries to within a block: a little slack for the last one.
  const double fit = std::floor(available_s / *cycle_s + 1e-6);
  if (fit >= wanted) return wanted * *cycle_s;
  if (fit >= 2) return fit * *cycle_s;
  return std::max(window_s, available_s);
}

void RollingRegime::add(const Sample& sample, const std::vector<PowerPoint>& points) {
  trace_.samples.push_back(sample);
  for (const auto& p : points)
    if (trace_.power_points.empty() || p.t_s > trace_.power_points.back().t_s)
      trace_.power_points.push_back(p);
  const double cut_s = sample.t_s - history_s();
  drop_before(trace_.samples, cut_s);
  drop_before(trace_.power_points, cut_s);
}

std::optional<RegimeReport> RollingRegime::classify(const GpuInfo& info) const {
  if (trace_.samples.size() < 2 ||
      trace_.samples.back().t_s - trace_.samples.front().t_s < kMinWindow_s)
    return std::nullopt;
  const double first_s = trace_.samples.front().t_s, end_s = trace_.samples.back().t_s;
  MeasureOptions opts;
  opts.use_steps = false;
  opts.detect_steady_state = false;  // the window slides: all of it is "now"
  opts.gpu = trace_.samples.back().gpu;
  opts.bootstrap.resamples = kRollingResamples;
  const PhaseSegmentation seg = find_phases(trace_, first_s, end_s, opts.gpu);
  const double window_s = phased_window_s(window_s_, history_cycle_s(seg), end_s - first_s);
  const Measurement m = measure_window(trace_, std::max(first_s, end_s - window_s), end_s, opts);
  if (!too_short_to_classify(m).empty()) return std::nullopt;
  return with_phases(trace_, regime::classify(m, info), info, opts);
}

}  // namespace regime::exporter
