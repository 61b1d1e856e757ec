#include "analysis/segmented_measurement.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "common/error.hpp"

namespace regime {

namespace {

double sq(double x) { return x * x; }

// Adjacent pairs of a sorted list of (value, weight) merged into their weighted mean: half the
// length, the same total weight, the order kept.
std::vector<std::pair<double, double>> halve(const std::vector<std::pair<double, double>>& w) {
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i + 1 < w.size(); i += 2) {
    const double weight = w[i].second + w[i + 1].second;
    out.emplace_back((w[i].first * w[i].second + w[i + 1].first * w[i + 1].second) / weight,
                     weight);
  }
  if (w.size() % 2 == 1) out.push_back(w.back());
  return out;
}

// At most `n` evenly spaced quantiles of a sorted list of (value, weight).
std::vector<double> quantiles(const std::vector<std::pair<double, double>>& w, size_t n) {
  double total = 0;
  for (const auto& p : w) total += p.second;
  n = std::min(n, static_cast<size_t>(std::llround(total)));
  std::vector<double> out;
  double below = 0;
  size_t j = 0;
  for (size_t i = 0; i < n && !w.empty(); ++i) {
    const double target = (static_cast<double>(i) + 0.5) / static_cast<double>(n) * total;
    while (j + 1 < w.size() && below + w[j].second < target) below += w[j++].second;
    out.push_back(w[j].first);
  }
  return out;
}

}  // namespace

void SegmentedMeasurement::add(const Measurement& m) {
  if (!m.per_second && m.steps > 0)
    steps_.add(m, m.steps);
  else
    seconds_.add(m, std::max(0.0, m.window_end_s - m.window_start_s));
}

Measurement SegmentedMeasurement::result() const {
  if (segments() == 0) throw Error(ErrorKind::Internal, "segmented measurement: no segment");
  return steps_.count > 0 ? steps_.result() : seconds_.result();
}

void SegmentedMeasurement::Fold::add(const Measurement& m, double w) {
  if (count++ == 0) first = m;
  end_s = m.window_end_s;
  const double d = std::max(0.0, m.window_end_s - m.window_start_s);
  energy_J += m.energy_J;
  seconds += d;
  weight += w;
  steps += m.steps;
  samples += m.samples;
  source = std::max(source, m.energy_source);  // the least direct source any segment used
  time_sum += w * m.time_per_step_s;
  time_lo2 += sq(w * (m.time_per_step_s - m.time_per_step_ci_s.first));
  time_hi2 += sq(w * (m.time_per_step_ci_s.second - m.time_per_step_s));
  energy_lo2 += sq(w * (m.energy_per_step_J - m.energy_per_step_ci_J.first));
  energy_hi2 += sq(w * (m.energy_per_step_ci_J.second - m.energy_per_step_J));
  p95_W.add(m.p95_power_W, d);
  temp_C.add(m.mean_temp_C, d);
  sm_MHz.add(m.mean_sm_MHz, d);
  p05_sm_MHz.add(m.p05_sm_MHz, d);
  util_pct.add(m.mean_util_pct, d);
  limit_W.add(m.mean_limit_W, d);
  gap.add(m.step_gap_fraction, d);
  auto larger = [](std::optional<double>& into, const std::optional<double>& v) {
    if (v) into = std::max(into.value_or(*v), *v);
  };
  larger(max_temp_C, m.max_temp_C);
  larger(max_sm_MHz, m.max_sm_MHz_seen);
  reasons_known = reasons_known || m.reasons_known;
  for (const auto& [bit, fraction] : m.reason_fraction) reason_seconds[bit] += fraction * d;
  // Thinned alike, every kept window stands for as many: the quantiles stay unbiased.
  // Merged as weighted points and halved when too many: every window keeps its weight.
  std::vector<std::pair<double, double>> incoming, merged;
  for (double v : m.window_power_W) incoming.emplace_back(v, 1.0);
  std::merge(window_power_W.begin(), window_power_W.end(), incoming.begin(), incoming.end(),
             std::back_inserter(merged));
  window_power_W = std::move(merged);
  while (window_power_W.size() > kMaxPowerWindows) window_power_W = halve(window_power_W);
}

Measurement SegmentedMeasurement::Fold::result() const {
  Measurement out = first;
  out.window_end_s = end_s;
  out.energy_J = energy_J;
  out.steps = steps;
  out.samples = samples;
  out.energy_source = source;
  out.avg_power_W = seconds > 0 ? energy_J / seconds : 0;
  if (weight > 0) {
    // With steps: energy over steps; without: over seconds (time per step stays 1).
    out.energy_per_step_J = energy_J / weight;
    out.energy_per_step_ci_J = {out.energy_per_step_J - std::sqrt(energy_lo2) / weight,
                                out.energy_per_step_J + std::sqrt(energy_hi2) / weight};
    out.time_per_step_s = time_sum / weight;
    out.time_per_step_ci_s = {out.time_per_step_s - std::sqrt(time_lo2) / weight,
                              out.time_per_step_s + std::sqrt(time_hi2) / weight};
  }
  out.p95_power_W = p95_W.mean().value_or(out.p95_power_W);
  out.mean_temp_C = temp_C.mean();
  out.max_temp_C = max_temp_C;
  out.mean_sm_MHz = sm_MHz.mean();
  out.p05_sm_MHz = p05_sm_MHz.mean();
  out.max_sm_MHz_seen = max_sm_MHz;
  out.mean_util_pct = util_pct.mean();
  out.mean_limit_W = limit_W.mean();
  out.step_gap_fraction = gap.mean();
  out.reasons_known = reasons_known;
  out.reason_fraction.clear();
  if (seconds > 0)
    for (const auto& [bit, s] : reason_seconds) out.reason_fraction[bit] = s / seconds;
  out.window_power_W = quantiles(window_power_W, kMaxPowerWindows);
  if (count > 1)
    out.steady_state_rule +=
        fmt::format("; then {} more segment(s) measured as the run went, detection off", count - 1);
  return out;
}

}  // namespace regime
