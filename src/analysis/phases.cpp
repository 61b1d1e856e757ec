#include "analysis/phases.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <span>

#include "analysis/classify.hpp"
#include "analysis/series.hpp"
#include "analysis/statistics.hpp"
#include "analysis/steady_state.hpp"
#include "common/error.hpp"

namespace regime {

namespace {

// The best cut of sorted[lo, hi) into two parts of at least `min_blocks` each, by the least
// squared error inside the parts; nullopt when the range is too short for two such parts.
std::optional<size_t> best_cut(const std::vector<double>& sorted, size_t lo, size_t hi,
                               size_t min_blocks) {
  if (hi - lo < 2 * min_blocks || hi - lo < 2) return std::nullopt;
  std::vector<double> sum(hi - lo + 1, 0), sq(hi - lo + 1, 0);
  for (size_t i = lo; i < hi; ++i) {
    sum[i - lo + 1] = sum[i - lo] + sorted[i];
    sq[i - lo + 1] = sq[i - lo] + sorted[i] * sorted[i];
  }
  auto sse = [&](size_t a, size_t b) {  // of [lo + a, lo + b)
    const double n = static_cast<double>(b - a), s = sum[b] - sum[a];
    return std::max(0.0, sq[b] - sq[a] - s * s / n);
  };
  const size_t n = hi - lo;
  std::optional<size_t> best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (size_t k = min_blocks; k + min_blocks <= n; ++k)
    if (const double e = sse(0, k) + sse(k, n); e < best_sse) {
      best_sse = e;
      best = lo + k;
    }
  return best;
}

// Sorted levels cut into parts (cuts: the first index of each part after the first): each part's
// mean, and the smallest gap between neighbouring means in pooled standard deviations of the
// blocks inside the parts.
struct Partition {
  std::vector<size_t> cuts;
  std::vector<double> means_W;
  double sse = 0;
  double separation = 0;
  bool accepted = false;
};

Partition evaluate(const std::vector<double>& sorted, std::vector<size_t> cuts,
                   const PhaseOptions& o) {
  Partition p;
  p.cuts = std::move(cuts);
  std::vector<size_t> edges = {0};
  edges.insert(edges.end(), p.cuts.begin(), p.cuts.end());
  edges.push_back(sorted.size());
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    const std::span<const double> part(sorted.data() + edges[i], edges[i + 1] - edges[i]);
    const double m = mean(part);
    p.means_W.push_back(m);
    for (double v : part) p.sse += (v - m) * (v - m);
  }
  const size_t k = p.means_W.size();
  const double sd =
      sorted.size() > k ? std::sqrt(p.sse / static_cast<double>(sorted.size() - k)) : 0;
  p.separation = std::numeric_limits<double>::infinity();
  p.accepted = true;
  for (size_t i = 0; i + 1 < k; ++i) {
    const double gap = p.means_W[i + 1] - p.means_W[i];
    const double sep = sd > 0 ? gap / sd : (gap > 0 ? std::numeric_limits<double>::infinity() : 0);
    p.separation = std::min(p.separation, sep);
    if (sep < o.separation || gap < o.min_gap_rel * p.means_W[i + 1]) p.accepted = false;
  }
  return p;
}

// Three parts: the two-part cut and the best cut of either part, moved to where the boundaries
// halve the distance between neighbouring means (a few rounds of 1-D k-means).
std::optional<Partition> three_parts(const std::vector<double>& sorted, size_t cut,
                                     size_t min_blocks, const PhaseOptions& o) {
  std::optional<Partition> best;
  for (const auto& [lo, hi] : {std::pair<size_t, size_t>{0, cut}, {cut, sorted.size()}}) {
    const std::optional<size_t> inner = best_cut(sorted, lo, hi, min_blocks);
    if (!inner) continue;
    std::vector<size_t> cuts = {std::min(cut, *inner), std::max(cut, *inner)};
    for (int round = 0; round < 10; ++round) {
      const Partition p = evaluate(sorted, cuts, o);
      std::vector<size_t> next;
      for (size_t i = 0; i + 1 < p.means_W.size(); ++i) {
        const double mid = (p.means_W[i] + p.means_W[i + 1]) / 2;
        next.push_back(static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), mid) -
                                           sorted.begin()));
      }
      const bool sized = next[0] >= min_blocks && next[1] - next[0] >= min_blocks &&
                         sorted.size() - next[1] >= min_blocks;
      if (!sized || next == cuts) break;
      cuts = next;
    }
    Partition p = evaluate(sorted, cuts, o);
    if (p.accepted && (!best || p.sse < best->sse)) best = p;
  }
  return best;
}

struct Segment {
  double t0_s = 0, t1_s = 0;
  int kind = 0;
  double seconds() const { return t1_s - t0_s; }
};

void coalesce(std::vector<Segment>& segs) {
  std::vector<Segment> out;
  for (const Segment& s : segs) {
    if (!out.empty() && out.back().kind == s.kind)
      out.back().t1_s = s.t1_s;
    else
      out.push_back(s);
  }
  segs = std::move(out);
}

double mean_power(const detail::Cumulative& F, double a, double b) {
  return b > a ? F.between(a, b) / (b - a) : 0;
}

// Each kind's level: its spans' time-weighted mean power.
std::vector<double> kind_levels(const std::vector<Segment>& segs, const detail::Cumulative& F,
                                int kinds) {
  std::vector<double> energy(static_cast<size_t>(kinds), 0), time(static_cast<size_t>(kinds), 0);
  for (const Segment& s : segs) {
    energy[static_cast<size_t>(s.kind)] += F.between(s.t0_s, s.t1_s);
    time[static_cast<size_t>(s.kind)] += s.seconds();
  }
  std::vector<double> out(static_cast<size_t>(kinds), 0);
  for (size_t k = 0; k < out.size(); ++k) out[k] = time[k] > 0 ? energy[k] / time[k] : 0;
  return out;
}

// The neighbouring segment a short one joins: the one whose kind's level is nearer its own power.
size_t neighbour_to_join(const std::vector<Segment>& segs, size_t i, const detail::Cumulative& F,
                         const std::vector<double>& level) {
  if (i == 0) return 1;
  if (i + 1 == segs.size()) return i - 1;
  const double p = mean_power(F, segs[i].t0_s, segs[i].t1_s);
  const double before = std::abs(level[static_cast<size_t>(segs[i - 1].kind)] - p);
  const double after = std::abs(level[static_cast<size_t>(segs[i + 1].kind)] - p);
  return before <= after ? i - 1 : i + 1;
}

// Spans shorter than min_phase_s join a neighbour, shortest first.
void merge_short(std::vector<Segment>& segs, const detail::Cumulative& F,
                 const std::vector<double>& level, double min_phase_s) {
  while (segs.size() > 1) {
    size_t shortest = 0;
    for (size_t i = 1; i < segs.size(); ++i)
      if (segs[i].seconds() < segs[shortest].seconds()) shortest = i;
    if (segs[shortest].seconds() >= min_phase_s) return;
    segs[shortest].kind = segs[neighbour_to_join(segs, shortest, F, level)].kind;
    coalesce(segs);
  }
}

// Kinds with under min_share of the time are folded into the kind of the nearest level.
void fold_small_kinds(std::vector<Segment>& segs, const detail::Cumulative& F, int kinds,
                      double min_share, double total_s) {
  for (;;) {
    std::vector<double> time(static_cast<size_t>(kinds), 0);
    for (const Segment& s : segs) time[static_cast<size_t>(s.kind)] += s.seconds();
    const std::vector<double> level = kind_levels(segs, F, kinds);
    int smallest = -1;
    for (int k = 0; k < kinds; ++k)
      if (time[static_cast<size_t>(k)] > 0 && time[static_cast<size_t>(k)] < min_share * total_s &&
          (smallest < 0 || time[static_cast<size_t>(k)] < time[static_cast<size_t>(smallest)]))
        smallest = k;
    int present = 0;
    for (double t : time) present += t > 0 ? 1 : 0;
    if (smallest < 0 || present < 2) return;
    int nearest = -1;
    for (int k = 0; k < kinds; ++k)
      if (k != smallest && time[static_cast<size_t>(k)] > 0 &&
          (nearest < 0 ||
           std::abs(level[static_cast<size_t>(k)] - level[static_cast<size_t>(smallest)]) <
               std::abs(level[static_cast<size_t>(nearest)] -
                        level[static_cast<size_t>(smallest)])))
        nearest = k;
    for (Segment& s : segs)
      if (s.kind == smallest) s.kind = nearest;
    coalesce(segs);
  }
}

// A cycle: every kind with two or more spans starts again after about the same time.
void find_cycle(PhaseSegmentation& seg) {
  std::vector<double> periods;
  for (int k = 0; k < seg.kinds(); ++k) {
    std::optional<double> last;
    int count = 0;
    for (const PhaseSpan& s : seg.spans) {
      if (s.kind != k) continue;
      if (last) periods.push_back(s.t0_s - *last);
      last = s.t0_s;
      ++count;
    }
    seg.cycles = std::max(seg.cycles, count);
  }
  if (periods.empty()) return;
  const double period = median(periods);
  // Within a quarter of the median: the blocks place each boundary to within a block or two.
  for (double p : periods)
    if (std::abs(p - period) > 0.25 * period) return;
  seg.cycle_s = period;
}

PhaseSegmentation one_phase(double t0_s, double t1_s, double level_W, double separation,
                            std::string rule) {
  PhaseSegmentation seg;
  seg.spans = {{t0_s, t1_s, 0}};
  seg.level_W = {level_W};
  seg.separation = separation;
  seg.rule = std::move(rule);
  return seg;
}

std::vector<const Sample*> samples_of(const Trace& trace, std::optional<int> gpu) {
  const int chosen = gpu ? *gpu : (trace.samples.empty() ? 0 : trace.samples.front().gpu);
  std::vector<const Sample*> out;
  for (const Sample& s : trace.samples)
    if (s.gpu == chosen) out.push_back(&s);
  return out;
}

}  // namespace

PhaseSegmentation find_phases(const Trace& trace, double t0_s, double t1_s, std::optional<int> gpu,
                              const PhaseOptions& o) {
  const std::vector<const Sample*> samples = samples_of(trace, gpu);
  const detail::Cumulative F = detail::power_integral_for_settling(samples, trace.power_points);
  double a = t0_s, b = t1_s;
  if (F.t_s.size() >= 2) {
    a = std::max(a, F.t_s.front());
    b = std::min(b, F.t_s.back());
  }
  if (F.t_s.size() < 2 || !(b > a))
    return one_phase(t0_s, t1_s, 0, 0, "one phase: no power readings to tell phases apart");
  if (b - a < 2 * o.min_phase_s)
    return one_phase(
        t0_s, t1_s, mean_power(F, a, b), 0,
        fmt::format("one phase: {:.2f} s holds no two phases of {} s", b - a, o.min_phase_s));
  // Never more blocks than power readings: a long gap must not become a block per half second.
  const double block_s =
      std::max(o.block_s, (b - a) / static_cast<double>(std::max<size_t>(4, F.t_s.size())));
  const auto count = static_cast<size_t>(std::floor((b - a) / block_s));
  std::vector<double> level(count);
  for (size_t i = 0; i < count; ++i) {
    const double bs = a + static_cast<double>(i) * block_s;
    const double be = i + 1 == count ? b : bs + block_s;
    level[i] = mean_power(F, bs, be);
  }
  std::vector<double> sorted = level;
  std::sort(sorted.begin(), sorted.end());
  const auto min_blocks =
      static_cast<size_t>(std::max(1.0, std::ceil(o.min_phase_s / block_s - 1e-9)));

  // Level boundaries, ascending: two parts, or three where each neighbouring pair stands apart.
  const std::optional<size_t> cut = best_cut(sorted, 0, sorted.size(), min_blocks);
  const double whole_W = mean_power(F, a, b);
  if (!cut) return one_phase(t0_s, t1_s, whole_W, 0, "one phase: too few blocks to split");
  // Three levels can hide a good split of two: the middle level widens one of the two parts.
  Partition chosen = evaluate(sorted, {*cut}, o);
  std::optional<Partition> three;
  if (o.max_kinds >= 3) three = three_parts(sorted, *cut, min_blocks, o);
  if (three) chosen = *three;
  if (!chosen.accepted)
    return one_phase(
        t0_s, t1_s, whole_W, chosen.separation,
        fmt::format("one phase: the {} s blocks' power splits best into {:.0f} W and {:.0f} W, "
                    "{:.1f} pooled SDs apart (a phase wants >= {:.1f} and a gap of >= {:.0f}% of "
                    "the higher level)",
                    block_s, chosen.means_W[1], chosen.means_W[0], chosen.separation, o.separation,
                    100 * o.min_gap_rel));
  std::vector<double> bounds;
  for (size_t c : chosen.cuts) bounds.push_back((sorted[c - 1] + sorted[c]) / 2);
  const double separation = chosen.separation;
  const int kinds = static_cast<int>(bounds.size()) + 1;

  std::vector<Segment> segs;
  for (size_t i = 0; i < count; ++i) {
    const int kind =
        static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), level[i]) - bounds.begin());
    const double bs = i == 0 ? t0_s : a + static_cast<double>(i) * block_s;
    const double be = i + 1 == count ? t1_s : a + static_cast<double>(i + 1) * block_s;
    segs.push_back({bs, be, kind});
  }
  coalesce(segs);
  merge_short(segs, F, kind_levels(segs, F, kinds), o.min_phase_s);
  fold_small_kinds(segs, F, kinds, o.min_share, t1_s - t0_s);

  // Number the kinds left by level, highest first.
  const std::vector<double> levels = kind_levels(segs, F, kinds);
  std::vector<int> present;
  for (int k = 0; k < kinds; ++k)
    if (std::any_of(segs.begin(), segs.end(), [k](const Segment& s) { return s.kind == k; }))
      present.push_back(k);
  if (present.size() < 2)
    return one_phase(t0_s, t1_s, whole_W, separation,
                     fmt::format("one phase: the power levels split ({:.1f} pooled SDs apart) but "
                                 "no second level lasts {} s at a time and {:.0f}% of the window",
                                 separation, o.min_phase_s, 100 * o.min_share));
  std::sort(present.begin(), present.end(), [&](int x, int y) {
    return levels[static_cast<size_t>(x)] > levels[static_cast<size_t>(y)];
  });
  PhaseSegmentation seg;
  for (int k : present) seg.level_W.push_back(levels[static_cast<size_t>(k)]);
  for (const Segment& s : segs) {
    const auto rank = std::find(present.begin(), present.end(), s.kind) - present.begin();
    seg.spans.push_back({s.t0_s, s.t1_s, static_cast<int>(rank)});
  }
  seg.separation = separation;
  find_cycle(seg);
  std::string levels_text;
  for (double w : seg.level_W)
    levels_text += fmt::format("{}{:.0f} W", levels_text.empty() ? "" : ", ", w);
  seg.rule = fmt::format(
      "{} phase kinds in {} spans of >= {} s: {} s blocks' power at {} ({:.1f} pooled SDs apart, "
      ">= {:.1f}){}",
      seg.kinds(), seg.spans.size(), o.min_phase_s, block_s, levels_text, separation, o.separation,
      seg.cycle_s ? fmt::format("; a cycle of {:.1f} s", *seg.cycle_s) : std::string());
  return seg;
}

namespace {

// Each span measured whole (no warm-up dropped: a span starts where the power level changed);
// spans with nothing to measure in them are left out.
std::vector<Measurement> measure_each_span(const Trace& trace, const std::vector<Interval>& spans_s,
                                           const MeasureOptions& opts) {
  MeasureOptions o = opts;
  o.detect_steady_state = false;
  o.warmup_s.reset();
  std::vector<Measurement> ms;
  for (const auto& [t0, t1] : spans_s) {
    if (!(t1 > t0)) continue;
    try {
      ms.push_back(measure_window(trace, t0, t1, o));
    } catch (const Error&) {
      // A span with nothing to measure in it adds nothing to its phase.
    }
  }
  return ms;
}

// A time-weighted mean of a figure some spans may lack: those add no weight.
struct TimeWeighted {
  double sum = 0, weight = 0;
  void add(const std::optional<double>& v, double w) {
    if (!v) return;
    sum += *v * w;
    weight += w;
  }
  std::optional<double> mean() const {
    return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
  }
};

// What the spans add up to, before it becomes one Measurement.
struct SpanTotals {
  double total_s = 0;
  std::vector<double> energies_J, units;  // per span: its energy, and its steps
  TimeWeighted temp_C, sm_MHz, p05_sm_MHz, util_pct, limit_W, gap, p95_power_W;
  std::map<uint64_t, double> reason_s;  // seconds each reason bit was active
  // Step-weighted sums of the time per step and of its interval's ends.
  double time_sum_s = 0, time_lo_s = 0, time_hi_s = 0;
};

// Adds one span: its sums and maxima straight into `out`, the rest into `t`.
void add_span(const Measurement& m, SpanTotals& t, Measurement& out) {
  const double s = m.window_end_s - m.window_start_s;
  t.total_s += s;
  out.steps += m.steps;
  out.energy_J += m.energy_J;
  out.samples += m.samples;
  t.energies_J.push_back(m.energy_J);
  t.units.push_back(m.steps > 0 ? m.steps : 0);
  t.temp_C.add(m.mean_temp_C, s);
  t.sm_MHz.add(m.mean_sm_MHz, s);
  t.p05_sm_MHz.add(m.p05_sm_MHz, s);
  t.util_pct.add(m.mean_util_pct, s);
  t.limit_W.add(m.mean_limit_W, s);
  t.gap.add(m.step_gap_fraction, s);
  t.p95_power_W.add(m.p95_power_W, s);
  if (m.max_temp_C) out.max_temp_C = std::max(out.max_temp_C.value_or(-1e9), *m.max_temp_C);
  if (m.max_sm_MHz_seen)
    out.max_sm_MHz_seen = std::max(out.max_sm_MHz_seen.value_or(0.0), *m.max_sm_MHz_seen);
  for (const auto& [bit, f] : m.reason_fraction) t.reason_s[bit] += f * s;
  out.reasons_known = out.reasons_known || m.reasons_known;
  if (m.steps > 0) {
    t.time_sum_s += m.time_per_step_s * m.steps;
    t.time_lo_s += m.time_per_step_ci_s.first * m.steps;
    t.time_hi_s += m.time_per_step_ci_s.second * m.steps;
  }
  out.window_power_W.insert(out.window_power_W.end(), m.window_power_W.begin(),
                            m.window_power_W.end());
}

// Time and energy per step of the phase, or per second of it when no span has steps; the
// energy interval is bootstrapped span to span, the variation a phase's figure carries (one
// span keeps its own interval).
void set_per_step_figures(const std::vector<Measurement>& ms, const SpanTotals& t,
                          const BootstrapOptions& boot, Measurement& out) {
  std::vector<double> span_s;  // per second of the phase: each span's energy against its length
  if (out.per_second) {
    for (const Measurement& m : ms) span_s.push_back(m.window_end_s - m.window_start_s);
    out.time_per_step_s = 1;
    out.time_per_step_ci_s = {1, 1};
    out.energy_per_step_J = out.avg_power_W;
  } else {
    const double steps = out.steps;
    out.time_per_step_s = t.time_sum_s / steps;
    out.time_per_step_ci_s = {t.time_lo_s / steps, t.time_hi_s / steps};
    out.energy_per_step_J = out.energy_J / steps;
  }
  const std::vector<double>& units = out.per_second ? span_s : t.units;
  out.energy_per_step_ci_J = ms.size() >= 2 ? bootstrap_ratio_ci(t.energies_J, units, boot)
                                            : ms.front().energy_per_step_ci_J;
}

// The time-weighted means, and each reason's share of the phase's time.
void set_mean_figures(const SpanTotals& t, Measurement& out) {
  out.mean_temp_C = t.temp_C.mean();
  out.mean_sm_MHz = t.sm_MHz.mean();
  out.p05_sm_MHz = t.p05_sm_MHz.mean();
  out.mean_util_pct = t.util_pct.mean();
  out.mean_limit_W = t.limit_W.mean();
  out.step_gap_fraction = t.gap.mean();
  out.p95_power_W = t.p95_power_W.mean().value_or(0);
  for (const auto& [bit, s] : t.reason_s)
    if (t.total_s > 0 && s > 0) out.reason_fraction[bit] = s / t.total_s;
}

}  // namespace

Measurement measure_spans(const Trace& trace, const std::vector<Interval>& spans_s,
                          const MeasureOptions& opts) {
  const std::vector<Measurement> ms = measure_each_span(trace, spans_s, opts);
  if (ms.empty())
    throw Error(ErrorKind::InvalidArgument, "none of the phase's spans could be measured");
  Measurement out;
  SpanTotals totals;
  for (const Measurement& m : ms) add_span(m, totals, out);
  // The spans lie end to end in the phase's own time, from where the first one starts.
  const Measurement& first = ms.front();
  out.window_start_s = first.window_start_s;
  out.window_end_s = first.window_start_s + totals.total_s;
  out.gpu = first.gpu;
  out.energy_source = first.energy_source;
  out.energy_detail = first.energy_detail;
  out.window_power_s = first.window_power_s;
  out.window_power_source = first.window_power_source;
  std::sort(out.window_power_W.begin(), out.window_power_W.end());
  out.avg_power_W = totals.total_s > 0 ? out.energy_J / totals.total_s : 0;
  out.per_second = out.steps == 0;
  set_per_step_figures(ms, totals, opts.bootstrap, out);
  set_mean_figures(totals, out);
  out.steady_state_rule = fmt::format(
      "{} span(s) of one phase, {:.2f} s in all, each measured whole (a span starts where the "
      "power level changed: no warm-up dropped)",
      ms.size(), totals.total_s);
  return out;
}

namespace {

bool busy(Regime r) {
  return r == Regime::CapBound || r == Regime::ThermalBound || r == Regime::Headroom;
}

// What a cap does in a phase that does not name the job, in one sentence.
std::string other_phase_advice(const PhaseReport& p, double limit_W) {
  const std::string share = fmt::format("{:.0f}% of the energy", 100 * p.energy_fraction);
  switch (p.regime) {
    case Regime::CapBound:
      return fmt::format(
          "The cap-bound phase ({}) is held at the {:.0f} W limit: a lower cap slows it.", share,
          limit_W);
    case Regime::ThermalBound:
      return fmt::format(
          "The thermal-bound phase ({}) throttles on heat: a cap or a thermal controller may stop "
          "it.",
          share);
    case Regime::Headroom:
      return fmt::format(
          "The headroom phase ({}) draws {:.0f} W at full clocks: a cap above that changes "
          "nothing there.",
          share, p.measurement.avg_power_W);
    case Regime::Underutilized:
      return fmt::format(
          "In the underutilized phase ({}) the GPU waits on the host: a cap changes little there.",
          share);
    case Regime::Idle:
      return fmt::format("The idle phase ({}) does no work.", share);
  }
  return "";
}

std::string mix_advice(const std::vector<PhaseReport>& kinds, const PhaseSegmentation& seg,
                       double limit_W) {
  std::string list;
  for (const PhaseReport& p : kinds)
    list += fmt::format("{}{} {:.0f}% of the time and {:.0f}% of the energy at {:.0f} W",
                        list.empty() ? "" : "; ", to_string(p.regime), 100 * p.time_fraction,
                        100 * p.energy_fraction, p.measurement.avg_power_W);
  const PhaseReport& top = kinds.front();
  std::string out = fmt::format(
      "The job runs in {} phases{}: {}. ", kinds.size(),
      seg.cycle_s ? fmt::format(" that repeat every {:.1f} s", *seg.cycle_s) : std::string(), list);
  out += busy(top.regime)
             ? fmt::format(
                   "The {} phase holds most of the energy, so a cap matters for this job: "
                   "{}",
                   to_string(top.regime), top.advice)
             : fmt::format("The {} phase holds most of the energy: {}", to_string(top.regime),
                           top.advice);
  for (size_t i = 1; i < kinds.size(); ++i) out += " " + other_phase_advice(kinds[i], limit_W);
  return out;
}

}  // namespace

PhaseSegmentation find_run_phases(const Trace& trace, const Measurement& whole,
                                  const PhaseOptions& opts) {
  PhaseSegmentation seg =
      find_phases(trace, whole.window_start_s, whole.window_end_s, whole.gpu, opts);
  // A run that is phased inside its steady window may have had its first phase dropped as
  // warm-up (a rule that compares with the second half sees a busy first phase as one): then the
  // search starts at the first step. A steady window keeps the warm-up out, as measure() did.
  if (seg.kinds() < 2 || whole.per_second || whole.warmup_dropped_s <= 0) return seg;
  PhaseSegmentation from_first_step = find_phases(
      trace, whole.window_start_s - whole.warmup_dropped_s, whole.window_end_s, whole.gpu, opts);
  return from_first_step.kinds() >= 2 ? from_first_step : seg;
}

RegimeReport with_phases(const Trace& trace, RegimeReport whole, const GpuInfo& gpu,
                         const MeasureOptions& opts, const PhaseOptions& phase_opts) {
  if (!(whole.measurement.window_end_s > whole.measurement.window_start_s)) return whole;
  const PhaseSegmentation seg = find_run_phases(trace, whole.measurement, phase_opts);
  const double from_s = seg.spans.front().t0_s, to_s = seg.spans.back().t1_s;
  // Phases recur: a run whose levels change once (a card that throttles as it heats, a load that
  // steps up) is a trend, and its steady window, not its two halves, is what a probe names.
  if (seg.kinds() < 2 || seg.cycles < 2) return whole;
  MeasureOptions o = opts;
  o.gpu = whole.measurement.gpu;
  if (from_s < whole.measurement.window_start_s) {
    // The whole run's figures then cover every phase, the first one too.
    MeasureOptions all = o;
    all.detect_steady_state = false;
    all.warmup_s.reset();
    try {
      whole.measurement = measure_window(trace, from_s, to_s, all);
    } catch (const Error&) {
      return whole;
    }
    whole.measurement.steady_state_rule =
        "a run of phases: nothing dropped as warm-up (its first phase is part of the job)";
  }
  std::vector<PhaseReport> kinds;
  const double window_s = to_s - from_s;
  double energy_J = 0;
  for (int k = 0; k < seg.kinds(); ++k) {
    PhaseReport p;
    double seconds = 0;
    for (const PhaseSpan& s : seg.spans)
      if (s.kind == k) {
        p.spans_s.push_back({s.t0_s, s.t1_s});
        seconds += s.t1_s - s.t0_s;
      }
    try {
      p.measurement = measure_spans(trace, p.spans_s, o);
    } catch (const Error&) {
      return whole;  // a phase that cannot be measured names nothing: the run stays one window
    }
    // A phase too short to name a regime leaves the run as one window too.
    if (!too_short_to_classify(p.measurement).empty()) return whole;
    const RegimeReport r = classify(p.measurement, gpu);
    p.regime = r.regime;
    p.confidence = r.confidence;
    p.advice = r.advice;
    p.evidence = r.evidence;
    p.time_fraction = seconds / window_s;
    energy_J += p.measurement.energy_J;
    kinds.push_back(std::move(p));
  }
  for (PhaseReport& p : kinds)
    p.energy_fraction = energy_J > 0 ? p.measurement.energy_J / energy_J : 0;
  std::stable_sort(kinds.begin(), kinds.end(), [](const PhaseReport& x, const PhaseReport& y) {
    return x.energy_fraction > y.energy_fraction;
  });
  const PhaseReport& top = kinds.front();
  RegimeReport out = std::move(whole);
  const double limit_W =
      gpu.enforced_limit_W > 0 ? gpu.enforced_limit_W : out.measurement.mean_limit_W.value_or(0);
  out.regime = top.regime;
  out.confidence = top.confidence;
  out.evidence = top.evidence;
  out.evidence["rule"] = fmt::format("{} phases; the {} phase holds {:.0f}% of the energy: {}",
                                     kinds.size(), to_string(top.regime), 100 * top.energy_fraction,
                                     top.evidence.value("rule", std::string()));
  out.evidence["phases"] = kinds.size();
  out.evidence["named_by_phase_energy_pct"] = std::round(1000 * top.energy_fraction) / 10;
  out.advice = mix_advice(kinds, seg, limit_W);
  out.phases = std::move(kinds);
  out.phase_cycle_s = seg.cycle_s;
  out.phase_cycles = seg.cycles;
  out.phase_rule = seg.rule;
  return out;
}

nlohmann::json to_json(const PhaseReport& p) {
  nlohmann::json spans = nlohmann::json::array();
  for (const auto& [a, b] : p.spans_s) spans.push_back({a, b});
  const Measurement& m = p.measurement;
  return {{"regime", to_string(p.regime)},
          {"confidence", p.confidence},
          {"time_fraction", p.time_fraction},
          {"energy_fraction", p.energy_fraction},
          {"avg_power_W", m.avg_power_W},
          {"energy_J", m.energy_J},
          {"seconds", m.window_end_s - m.window_start_s},
          {"steps", m.steps},
          {"energy_per_step_J", m.energy_per_step_J},
          {"per", m.per_second ? "second" : "step"},
          {"spans", spans},
          {"advice", p.advice},
          {"evidence", p.evidence},
          {"measurement", to_json(m)}};
}

void add_phases_json(const RegimeReport& r, nlohmann::json& out) {
  if (r.phases.empty()) return;
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseReport& p : r.phases) phases.push_back(to_json(p));
  out["phases"] = phases;
  out["phase_cycle_s"] = r.phase_cycle_s ? nlohmann::json(*r.phase_cycle_s) : nullptr;
  out["phase_cycles"] = r.phase_cycles;
  out["phase_rule"] = r.phase_rule;
}

std::string format_phases(const RegimeReport& r) {
  if (r.phases.empty()) return "";
  std::string out = fmt::format(
      "phases ({} kinds{}; the job is named by the one with most of the energy):\n",
      r.phases.size(),
      r.phase_cycle_s
          ? fmt::format(", a cycle of {:.1f} s begun {} times", *r.phase_cycle_s, r.phase_cycles)
          : std::string());
  auto to = std::back_inserter(out);
  for (const PhaseReport& p : r.phases) {
    const Measurement& m = p.measurement;
    fmt::format_to(
        to,
        "  {:<14}{:>4.0f}% of the time {:>4.0f}% of the energy  {:>6.1f} W  {} {}  {} "
        "span(s)  confidence {:.2f}\n",
        to_string(p.regime), 100 * p.time_fraction, 100 * p.energy_fraction, m.avg_power_W,
        m.per_second ? static_cast<int>(std::lround(m.window_end_s - m.window_start_s)) : m.steps,
        m.per_second ? "s" : "steps", p.spans_s.size(), p.confidence);
    fmt::format_to(to, "    because: {}\n", p.evidence.value("rule", std::string()));
  }
  fmt::format_to(to, "  found: {}\n\n", r.phase_rule);
  return out;
}

namespace {

struct CycleMeans {
  std::optional<double> power_W;
  std::optional<double> temp_C;
};

CycleMeans cycle_means(const Trace& trace, double t0_s, double t1_s, int gpu) {
  double power = 0, temp = 0;
  int n_power = 0, n_temp = 0;
  for (const Sample& s : trace.samples) {
    if (s.gpu != gpu || s.t_s < t0_s || s.t_s >= t1_s) continue;
    if (const auto p = s.power_W ? s.power_W : s.power_avg_W) {
      power += *p;
      ++n_power;
    }
    if (s.temp_C) {
      temp += *s.temp_C;
      ++n_temp;
    }
  }
  CycleMeans out;
  if (n_power > 0) out.power_W = power / n_power;
  if (n_temp > 0) out.temp_C = temp / n_temp;
  return out;
}

// Student-t interval of the mean of `values` around `centre`.
Interval t_interval(double centre, const std::vector<double>& values) {
  const double n = static_cast<double>(values.size());
  const double m = mean(values);
  double ss = 0;
  for (double v : values) ss += (v - m) * (v - m);
  const double half = student_t_quantile(0.975, n - 1) * std::sqrt(ss / (n - 1) / n);
  return {centre - half, centre + half};
}

}  // namespace

std::optional<CycleDrift> cycle_drift(const Trace& trace, double t_end_s, double cycle_s, int gpu) {
  const CycleMeans before = cycle_means(trace, t_end_s - 2 * cycle_s, t_end_s - cycle_s, gpu);
  const CycleMeans last = cycle_means(trace, t_end_s - cycle_s, t_end_s, gpu);
  if (!before.power_W || !last.power_W || !(*before.power_W > 0)) return std::nullopt;
  const double per_min = 60 / cycle_s;
  CycleDrift d;
  d.power_rel_per_min = (*last.power_W / *before.power_W - 1) * per_min;
  if (before.temp_C && last.temp_C) d.temp_C_per_min = (*last.temp_C - *before.temp_C) * per_min;
  return d;
}

std::optional<HeatingRate> heating_rate(const Trace& trace, double t0_s, double t_end_s,
                                        double window_s, int gpu) {
  const std::optional<double> cycle_s = cycle_to_follow(find_phases(trace, t0_s, t_end_s, gpu));
  if (cycle_s && t_end_s - t0_s >= 2 * *cycle_s)
    if (const std::optional<CycleDrift> d = cycle_drift(trace, t_end_s, *cycle_s, gpu);
        d && d->temp_C_per_min)
      return HeatingRate{Slope{*d->temp_C_per_min, 0}, cycle_s};
  const TrailingSlopes s = trailing_slopes(trace, t_end_s - window_s, t_end_s, gpu);
  if (!s.temp_C) return std::nullopt;
  return HeatingRate{*s.temp_C, std::nullopt};
}

std::optional<double> cycle_to_follow(const PhaseSegmentation& seg) {
  if (seg.kinds() >= 2 && seg.cycles >= kPhaseCyclesToFollow) return seg.cycle_s;
  return std::nullopt;
}

std::optional<double> next_cycle_start(const PhaseSegmentation& seg, double after_s) {
  if (!seg.cycle_s || !(*seg.cycle_s > 0)) return std::nullopt;
  std::optional<double> last;
  for (const PhaseSpan& s : seg.spans)
    if (s.kind == 0) last = s.t0_s;
  if (!last) return std::nullopt;
  const double periods = std::ceil((after_s - *last) / *seg.cycle_s);
  return *last + std::max(0.0, periods) * *seg.cycle_s;
}

Measurement measure_cycles(const Trace& trace, double start_s, double cycle_s, int cycles,
                           const MeasureOptions& opts) {
  MeasureOptions o = opts;
  o.detect_steady_state = false;
  o.warmup_s.reset();
  const double end_s = start_s + cycles * cycle_s;
  Measurement m = measure_window(trace, start_s, end_s, o);
  if (m.steps > 0) {
    m.energy_per_step_J = m.energy_J / m.steps;
    m.time_per_step_s = (end_s - start_s) / m.steps;
  }
  if (cycles >= 2 && m.steps > 0) {
    std::vector<double> energy, time;
    for (int i = 0; i < cycles; ++i) {
      const Measurement c =
          measure_window(trace, start_s + i * cycle_s, start_s + (i + 1) * cycle_s, o);
      if (c.steps <= 0) continue;
      energy.push_back(c.energy_J / c.steps);
      time.push_back(cycle_s / c.steps);
    }
    if (energy.size() >= 2) {
      m.energy_per_step_ci_J = t_interval(m.energy_per_step_J, energy);
      m.time_per_step_ci_s = t_interval(m.time_per_step_s, time);
    }
  }
  m.steady_state_rule = fmt::format(
      "{} whole cycle(s) of {:.1f} s from {:.1f} s (a job of phases: each window holds the same "
      "mix); per step: the window's energy and length over its steps, intervals over the cycles",
      cycles, cycle_s, start_s);
  return m;
}

}  // namespace regime
