#include "analysis/measure.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "analysis/reasons.hpp"
#include "analysis/series.hpp"
#include "analysis/steady_state.hpp"
#include "common/error.hpp"
#include "common/json_fields.hpp"
#include "common/name_table.hpp"

namespace regime {

std::string energy_source_name(EnergySource s) {
  constexpr std::string_view kNames[] = {"counter", "instant-power", "averaged-power", "none"};
  return std::string(name_of(s, kNames, "none"));
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<const Sample*> samples_of_gpu(const Trace& trace, const std::optional<int>& gpu,
                                          int& chosen) {
  chosen = gpu ? *gpu : (trace.samples.empty() ? 0 : trace.samples.front().gpu);
  std::vector<const Sample*> out;
  out.reserve(trace.samples.size());
  for (const Sample& s : trace.samples)
    if (s.gpu == chosen) out.push_back(&s);
  if (gpu && out.empty() && !trace.samples.empty())
    throw Error(ErrorKind::NotFound, fmt::format("the trace has no samples of gpu {}", *gpu));
  return out;
}

// Time-weighted statistics of the samples over [a, b]: each sample holds until the next one.
struct Accumulator {
  double weight = 0, sum = 0;
  void add(double v, double w) {
    weight += w;
    sum += v * w;
  }
  std::optional<double> mean() const {
    return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
  }
};

void sample_statistics(std::span<const Sample* const> samples, double a, double b, Measurement& m) {
  // First sample whose hold reaches into the window: the last one at or before a.
  auto it = std::upper_bound(samples.begin(), samples.end(), a,
                             [](double t, const Sample* s) { return t < s->t_s; });
  size_t i = it == samples.begin() ? 0 : static_cast<size_t>(it - samples.begin()) - 1;
  Accumulator temp, sm, util, limit;
  std::vector<double> power, sm_values;
  // Room for every sample, as address space: a vector left to double copies itself at its peak.
  power.reserve(samples.size());
  sm_values.reserve(samples.size());
  double max_temp = -kInf, max_sm = -kInf;
  double reason_weight = 0;
  std::array<double, 64> reason_time{};
  int count = 0;
  for (; i < samples.size() && samples[i]->t_s <= b; ++i) {
    const Sample& s = *samples[i];
    const double hold_end = i + 1 < samples.size() ? samples[i + 1]->t_s : s.t_s;
    double w = std::min(hold_end, b) - std::max(s.t_s, a);
    if (w < 0) continue;
    // A lone sample inside a window shorter than its hold still counts, with a tiny weight.
    w = std::max(w, 1e-9);
    ++count;
    if (s.temp_C) {
      temp.add(*s.temp_C, w);
      max_temp = std::max(max_temp, *s.temp_C);
    }
    if (s.sm_MHz) {
      sm.add(*s.sm_MHz, w);
      sm_values.push_back(*s.sm_MHz);
      max_sm = std::max(max_sm, *s.sm_MHz);
    }
    if (s.util_pct) util.add(*s.util_pct, w);
    if (s.limit_W) limit.add(*s.limit_W, w);
    if (s.power_W)
      power.push_back(*s.power_W);
    else if (s.power_avg_W)
      power.push_back(*s.power_avg_W);
    if (s.reasons) {
      reason_weight += w;
      for (uint64_t bits = *s.reasons; bits; bits &= bits - 1)
        reason_time[static_cast<size_t>(std::countr_zero(bits))] += w;
    }
  }
  m.samples = count;
  m.p95_power_W = percentile(power, 95);
  m.mean_temp_C = temp.mean();
  if (temp.weight > 0) m.max_temp_C = max_temp;
  m.mean_sm_MHz = sm.mean();
  if (!sm_values.empty()) {
    m.p05_sm_MHz = percentile(sm_values, 5);
    m.max_sm_MHz_seen = max_sm;
  }
  m.mean_util_pct = util.mean();
  m.mean_limit_W = limit.mean();
  m.reasons_known = reason_weight > 0;
  if (reason_weight > 0)
    for (int bit = 0; bit < 64; ++bit)
      if (reason_time[static_cast<size_t>(bit)] > 0)
        m.reason_fraction[uint64_t{1} << bit] =
            reason_time[static_cast<size_t>(bit)] / reason_weight;
}

// Energy-per-step interval: blocks of consecutive steps of about `block_s`, resampled whole.
Interval energy_ci_steps(std::span<const Step> steps, double window_end_s,
                         const detail::Cumulative& F, double block_s,
                         const BootstrapOptions& boot) {
  std::vector<double> edges, counts;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (edges.empty() || steps[i].t_start_s - edges.back() >= block_s) {
      edges.push_back(steps[i].t_start_s);
      counts.push_back(0);
    }
    counts.back() += 1;
  }
  edges.push_back(window_end_s);
  std::vector<double> energy;
  for (size_t b = 0; b + 1 < edges.size(); ++b) energy.push_back(F.between(edges[b], edges[b + 1]));
  return bootstrap_ratio_ci(energy, counts, boot);
}

// Energy-per-second interval: blocks of `block_s` seconds.
Interval energy_ci_time(double a, double b, const detail::Cumulative& F, double block_s,
                        const BootstrapOptions& boot) {
  // Never more blocks than readings of F: a long gap must not ask for a block per second of it.
  block_s = std::max(block_s, (b - a) / static_cast<double>(std::max<size_t>(1, F.t_s.size())));
  const auto n = std::max<size_t>(1, static_cast<size_t>(std::floor((b - a) / block_s)));
  std::vector<double> energy, seconds;
  for (size_t i = 0; i < n; ++i) {
    const double lo = a + static_cast<double>(i) * block_s;
    const double hi = i + 1 == n ? b : lo + block_s;
    energy.push_back(F.between(lo, hi));
    seconds.push_back(hi - lo);
  }
  return bootstrap_ratio_ci(energy, seconds, boot);
}

// The figures every report prints and every decision compares, by name and unit.
struct Figure {
  const char* name;
  double value;
  const char* unit;
};

std::vector<Figure> compared_figures(const Measurement& m) {
  return {{"time per step", m.time_per_step_s, "s"},
          {"time per step's interval low end", m.time_per_step_ci_s.first, "s"},
          {"time per step's interval high end", m.time_per_step_ci_s.second, "s"},
          {"energy per step", m.energy_per_step_J, "J"},
          {"energy per step's interval low end", m.energy_per_step_ci_J.first, "J"},
          {"energy per step's interval high end", m.energy_per_step_ci_J.second, "J"},
          {"average power", m.avg_power_W, "W"},
          {"p95 power", m.p95_power_W, "W"}};
}

// Values read within the plausible bounds (trace/plausible.hpp) keep every figure finite; this
// holds for traces built in code too, where no reader checked the values.
void require_finite(const Measurement& m) {
  for (const Figure& f : compared_figures(m))
    if (!std::isfinite(f.value))
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("cannot measure this window: its {} is not a finite number (a "
                              "reading in the trace is out of any GPU's range)",
                              f.name));
}

void require_valid_warmup(const MeasureOptions& opts) {
  if (opts.warmup_s && !(*opts.warmup_s >= 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("warm-up {} s is negative: give 0 or more seconds", *opts.warmup_s));
}

// The trace's complete steps wholly inside [t0_s, t1_s]; none when steps are not used.
std::vector<Step> steps_inside(const Trace& trace, double t0_s, double t1_s, bool use_steps) {
  std::vector<Step> steps;
  if (use_steps)
    for (const Step& s : trace.steps)
      if (s.t_start_s >= t0_s && s.t_end_s <= t1_s) steps.push_back(s);
  return steps;
}

// Drops the steps that start before or end after every energy source's readings (a sampler that
// started late, or stopped early, under a starved CPU): no source could measure a window holding
// them, and the rest can still be measured. Returns how many were dropped; none when that would
// leave no step.
size_t drop_unsampled_steps(std::vector<Step>& steps, std::span<const Sample* const> samples,
                            std::span<const PowerPoint> power_points) {
  const std::optional<detail::Span> sampled = detail::energy_coverage(samples, power_points);
  if (!sampled || steps.empty()) return 0;
  auto outside = [&](const Step& s) {
    return s.t_start_s < sampled->from_s || s.t_end_s > sampled->to_s;
  };
  const auto n_outside = static_cast<size_t>(std::count_if(steps.begin(), steps.end(), outside));
  if (n_outside == 0 || n_outside == steps.size()) return 0;
  std::erase_if(steps, outside);
  return n_outside;
}

// The steady part of the span, and the rule that chose it, for the report.
struct SteadyWindow {
  double start_s = 0, end_s = 0;
  double warmup_dropped_s = 0;
  std::string rule;
};

// Drops the warm-up steps from `steps` (at least one is left) and returns the window from the
// first kept step's start to the last step's end.
SteadyWindow steady_step_window(std::vector<Step>& steps, const MeasureOptions& opts,
                                const detail::Cumulative& settle_power) {
  SteadyWindow w;
  size_t first = 0;
  if (opts.warmup_s) {
    const double cut = steps.front().t_start_s + *opts.warmup_s;
    while (first < steps.size() && steps[first].t_start_s < cut) ++first;
    if (first == steps.size())
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("warm-up {} s drops every step: the steps span {:.3f} s",
                              *opts.warmup_s, steps.back().t_end_s - steps.front().t_start_s));
    w.rule = fmt::format("fixed warm-up of {} s: dropped {} step(s)", *opts.warmup_s, first);
  } else if (opts.detect_steady_state) {
    SteadySteps settled = settle_steps(steps, settle_power);
    first = settled.first;
    w.rule = std::move(settled.rule);
  } else {
    w.rule = "steady-state detection off: every step kept";
  }
  w.warmup_dropped_s = steps[first].t_start_s - steps.front().t_start_s;
  steps.erase(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(first));
  w.start_s = steps.front().t_start_s;
  w.end_s = steps.back().t_end_s;
  return w;
}

// Without steps: the samples' time inside [t0_s, t1_s], less the warm-up.
SteadyWindow steady_time_window(std::span<const Sample* const> samples, double t0_s, double t1_s,
                                const MeasureOptions& opts,
                                const detail::Cumulative& settle_power) {
  if (samples.empty())
    throw Error(ErrorKind::InvalidArgument, "the trace has no samples and no steps to measure");
  const double a = std::max(t0_s, samples.front()->t_s);
  const double b = std::min(t1_s, samples.back()->t_s);
  if (b <= a)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("no samples in the window [{}, {}] s", t0_s, t1_s));
  SteadyWindow w;
  if (opts.warmup_s) {
    if (a + *opts.warmup_s >= b)
      throw Error(
          ErrorKind::InvalidArgument,
          fmt::format("warm-up {} s drops the whole {:.3f} s window", *opts.warmup_s, b - a));
    w.start_s = a + *opts.warmup_s;
    w.end_s = b;
    w.rule = fmt::format("fixed warm-up of {} s", *opts.warmup_s);
  } else if (opts.detect_steady_state) {
    SteadyTime settled = settle_time(a, b, settle_power);
    w.start_s = settled.start_s;
    w.end_s = settled.end_s;
    w.rule = std::move(settled.rule);
  } else {
    w.start_s = a;
    w.end_s = b;
    w.rule = "steady-state detection off: the whole window kept";
  }
  w.warmup_dropped_s = w.start_s - a;
  return w;
}

// Time and energy per step over the steady steps, which span [ws, we] with the gaps between them.
void set_per_step_figures(const std::vector<Step>& steps, double ws, double we,
                          const detail::EnergyFunction& energy, double block_s,
                          const BootstrapOptions& boot, Measurement& m) {
  const double duration_s = we - ws;
  m.steps = static_cast<int>(steps.size());
  std::vector<double> durations;
  durations.reserve(steps.size());
  double busy_s = 0;
  for (const Step& s : steps) {
    durations.push_back(s.duration_s());
    busy_s += s.duration_s();
  }
  m.time_per_step_s = median(durations);
  m.time_per_step_ci_s = bootstrap_median_ci(durations, boot);
  m.energy_per_step_J = m.energy_J / static_cast<double>(steps.size());
  if (energy.source != EnergySource::None)
    m.energy_per_step_ci_J = energy_ci_steps(steps, we, energy.F, block_s, boot);
  m.step_gap_fraction = std::clamp(1 - busy_s / duration_s, 0.0, 1.0);
}

// Without steps every "per step" figure is per second of the window [ws, we].
void set_per_second_figures(double ws, double we, const detail::EnergyFunction& energy,
                            double block_s, const BootstrapOptions& boot, Measurement& m) {
  m.steps = 0;
  m.time_per_step_s = 1;
  m.time_per_step_ci_s = {1, 1};
  m.energy_per_step_J = m.avg_power_W;
  if (energy.source != EnergySource::None)
    m.energy_per_step_ci_J = energy_ci_time(ws, we, energy.F, block_s, boot);
}

Measurement measure_span(const Trace& trace, double t0_s, double t1_s, const MeasureOptions& opts) {
  require_valid_warmup(opts);
  Measurement m;
  const std::vector<const Sample*> samples = samples_of_gpu(trace, opts.gpu, m.gpu);
  detail::Cumulative settle_power =
      detail::power_integral_for_settling(samples, trace.power_points);
  std::vector<Step> steps = steps_inside(trace, t0_s, t1_s, opts.use_steps);
  const size_t unsampled_steps = drop_unsampled_steps(steps, samples, trace.power_points);
  m.per_second = steps.empty();
  SteadyWindow window = m.per_second ? steady_time_window(samples, t0_s, t1_s, opts, settle_power)
                                     : steady_step_window(steps, opts, settle_power);
  m.window_start_s = window.start_s;
  m.window_end_s = window.end_s;
  m.warmup_dropped_s = window.warmup_dropped_s;
  m.steady_state_rule = std::move(window.rule);
  if (unsampled_steps > 0)
    m.steady_state_rule +=
        fmt::format("; {} step(s) outside the sampled span left out first", unsampled_steps);
  if (m.per_second && opts.use_steps && !trace.steps.empty())
    m.steady_state_rule =
        "no complete step inside the window, so per second: " + m.steady_state_rule;

  // Freed once the window is chosen: the energy and power integrals below are as large.
  settle_power = detail::Cumulative{};
  const double ws = m.window_start_s, we = m.window_end_s;
  const double duration_s = we - ws;
  if (!(duration_s > 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("the steady window [{}, {}] s is empty", ws, we));
  // The window's energy and its power windows, both read from the samples over [ws, we].
  const detail::EnergyFunction energy =
      detail::best_energy_function(samples, trace.power_points, ws, we);
  detail::WindowPower windows =
      detail::window_power(samples, trace.power_points, ws, we, opts.window_power_s);
  m.energy_source = energy.source;
  m.energy_detail = energy.detail;
  m.energy_J = energy.source != EnergySource::None ? energy.F.between(ws, we) : 0;
  m.avg_power_W = m.energy_J / duration_s;
  const double block_s =
      std::min(kEnergyBlock_s, duration_s / static_cast<double>(kMinEnergyBlocks));
  if (m.per_second)
    set_per_second_figures(ws, we, energy, block_s, opts.bootstrap, m);
  else
    set_per_step_figures(steps, ws, we, energy, block_s, opts.bootstrap, m);
  sample_statistics(samples, ws, we, m);
  m.window_power_W = std::move(windows.means_W);
  m.window_power_s = opts.window_power_s;
  m.window_power_source = std::move(windows.source);
  require_finite(m);
  return m;
}

}  // namespace

Measurement measure(const Trace& trace, const MeasureOptions& opts) {
  return measure_span(trace, -kInf, kInf, opts);
}

Measurement measure_window(const Trace& trace, double t0_s, double t1_s,
                           const MeasureOptions& opts) {
  if (!(t1_s > t0_s))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("window [{}, {}] s: the end must come after the start", t0_s, t1_s));
  return measure_span(trace, t0_s, t1_s, opts);
}

std::string undecidable_figure(const Measurement& m) {
  for (const Figure& f : compared_figures(m))
    if (!std::isfinite(f.value)) return fmt::format("the {} is not a finite number", f.name);
  // Interval ends may be 0 or below (a half-width wider than the value); the values a ratio
  // divides by may not.
  for (const Figure& f : {Figure{"time per step", m.time_per_step_s, "s"},
                          Figure{"energy per step", m.energy_per_step_J, "J"}})
    if (!(f.value > 0))
      return fmt::format("the {} is {:g} {}, not above 0", f.name, f.value, f.unit);
  return "";
}

nlohmann::json to_json(const Measurement& m) {
  nlohmann::json reasons = nlohmann::json::object();
  for (const auto& [bit, fraction] : m.reason_fraction) reasons[reason_name(bit)] = fraction;
  nlohmann::json windows = nullptr;
  if (!m.window_power_W.empty())
    windows = {{"window_s", m.window_power_s},
               {"windows", m.window_power_W.size()},
               {"source", m.window_power_source},
               {"p50_W", percentile(m.window_power_W, 50)},
               {"p90_W", percentile(m.window_power_W, 90)},
               {"p99_W", percentile(m.window_power_W, 99)},
               {"max_W", m.window_power_W.back()}};
  return {
      {"steps", m.steps},
      {"time_per_step_s", m.time_per_step_s},
      {"time_per_step_ci_s", json_interval(m.time_per_step_ci_s)},
      {"energy_per_step_J", m.energy_per_step_J},
      {"energy_per_step_ci_J", json_interval(m.energy_per_step_ci_J)},
      {"avg_power_W", m.avg_power_W},
      {"energy_source", energy_source_name(m.energy_source)},
      {"per", m.per_second ? "second" : "step"},
      {"energy_J", m.energy_J},
      {"energy_detail", m.energy_detail},
      {"window_start_s", m.window_start_s},
      {"window_end_s", m.window_end_s},
      {"window_s", m.window_end_s - m.window_start_s},
      {"warmup_dropped_s", m.warmup_dropped_s},
      {"steady_state", m.steady_state_rule},
      {"gpu", m.gpu},
      {"samples", m.samples},
      {"p95_power_W", m.p95_power_W},
      {"mean_temp_C", json_or_null(m.mean_temp_C)},
      {"max_temp_C", json_or_null(m.max_temp_C)},
      {"mean_sm_MHz", json_or_null(m.mean_sm_MHz)},
      {"p05_sm_MHz", json_or_null(m.p05_sm_MHz)},
      {"max_sm_MHz_seen", json_or_null(m.max_sm_MHz_seen)},
      {"mean_util_pct", json_or_null(m.mean_util_pct)},
      {"mean_limit_W", json_or_null(m.mean_limit_W)},
      {"step_gap_fraction", json_or_null(m.step_gap_fraction)},
      {"reason_fraction", reasons},
      {"reasons_known", m.reasons_known},
      {"window_power", windows},
  };
}

}  // namespace regime
