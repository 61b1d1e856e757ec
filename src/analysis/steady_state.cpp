#include "analysis/steady_state.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "analysis/statistics.hpp"

namespace regime {

namespace {

struct Block {
  double start_s = 0, end_s = 0;
  size_t first = 0, end = 0;  // step indices [first, end) when judged on steps
  double step_s = 0;          // mean step time in the block (steps only)
  std::optional<double> power_W;
};

// Reference level and tolerance from the second-half blocks.
struct Band {
  double ref = 0, tol = 0;
  bool inside(double v) const { return std::abs(v - ref) <= tol; }
};

Band band(const std::vector<double>& values, double min_tol) {
  const double ref = median(values);
  return {ref, std::max({kSettleRelTolerance * std::abs(ref), kSettleRobustSds * robust_sd(values),
                         min_tol})};
}

std::optional<double> mean_power(const detail::Cumulative& power, double a, double b) {
  if (b <= a || !power.covers(a, b)) return std::nullopt;
  return power.between(a, b) / (b - a);
}

// Power band over the reference blocks, when every one of them has power.
std::optional<Band> power_band(const std::vector<Block>& blocks, size_t first_ref) {
  std::vector<double> p;
  for (size_t i = first_ref; i < blocks.size(); ++i) {
    if (!blocks[i].power_W) return std::nullopt;
    p.push_back(*blocks[i].power_W);
  }
  return band(p, kSettleMinPowerTolerance_W);
}

// Without steps, the work is where the GPU is busy. A command that spends most of a time-limited
// probe starting (a cold `import torch` and CUDA start-up took over 30 s on an H200) leaves the
// second half quiet, and the busy end would be trimmed as a tail. So the block powers are split
// in two (the split with the largest between-group variance); when the high group stands clear of
// the low one (its median above the low median by more than its own tolerance) and forms one
// stretch of at least 4 blocks, with nothing else high but spikes of 1 s at most, that stretch is
// the work and the high blocks are the reference. Busy and quiet stretches that alternate (a job
// that waits on its input) keep the second-half rule: their dips are part of the work.
struct BusyPhase {
  size_t first = 0, last = 0;  // block indices, inclusive
  Band band;
  double quiet_W = 0;  // median power of the other blocks
};

std::optional<BusyPhase> busy_phase(const std::vector<Block>& blocks) {
  std::vector<double> p;
  for (const Block& b : blocks) {
    if (!b.power_W) return std::nullopt;
    p.push_back(*b.power_W);
  }
  std::vector<double> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  double total = 0;
  for (double v : sorted) total += v;
  size_t best_low = 0;  // the low group is sorted[0, best_low)
  double best_between = -1, low_sum = 0;
  for (size_t k = 1; k < n; ++k) {
    low_sum += sorted[k - 1];
    const double nl = static_cast<double>(k), nh = static_cast<double>(n - k);
    const double d = low_sum / nl - (total - low_sum) / nh;
    const double between = nl * nh * d * d;
    if (between > best_between) {
      best_between = between;
      best_low = k;
    }
  }
  if (best_low == 0 || n - best_low < 4) return std::nullopt;
  const double threshold = sorted[best_low - 1];  // high blocks lie strictly above it
  std::vector<double> high(sorted.begin() + static_cast<std::ptrdiff_t>(best_low), sorted.end());
  std::vector<double> low(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(best_low));
  const Band hb = band(high, kSettleMinPowerTolerance_W);
  const double quiet_W = median(low);
  if (hb.ref - quiet_W <= hb.tol) return std::nullopt;  // one level with noise: no phases
  // Runs of consecutive high blocks: the longest is the work; any other may only be a spike (a
  // start-up kernel, at most kMaxSpikeBlocks long), never a second busy stretch.
  constexpr size_t kMaxSpikeBlocks = 2;
  size_t first = 0, last = 0, longest = 0;
  bool second_stretch = false;
  for (size_t k = 0; k < n;) {
    if (!(p[k] > threshold)) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end + 1 < n && p[end + 1] > threshold) ++end;
    const size_t len = end - k + 1;
    if (len > longest) {
      second_stretch = second_stretch || longest > kMaxSpikeBlocks;
      longest = len;
      first = k;
      last = end;
    } else if (len > kMaxSpikeBlocks) {
      second_stretch = true;
    }
    k = end + 1;
  }
  if (longest < 4 || second_stretch) return std::nullopt;
  return BusyPhase{first, last, hb, quiet_W};
}

}  // namespace

SteadySteps settle_steps(std::span<const Step> steps, const detail::Cumulative& power) {
  const size_t n = steps.size();
  if (n < kSettleMinSteps)
    return {0, fmt::format("{} step(s): too few to detect a warm-up (< {}); none dropped", n,
                           kSettleMinSteps)};
  std::vector<Block> blocks;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && steps[j - 1].t_end_s - steps[i].t_start_s < kSettleBlock_s) ++j;
    if (steps[j - 1].t_end_s - steps[i].t_start_s < kSettleBlock_s && !blocks.empty()) {
      blocks.back().end = j;  // a short tail joins the block before it
    } else {
      blocks.push_back({0, 0, i, j, 0, std::nullopt});
    }
    i = j;
  }
  for (Block& b : blocks) {
    b.start_s = steps[b.first].t_start_s;
    b.end_s = steps[b.end - 1].t_end_s;
    double busy = 0;
    for (size_t k = b.first; k < b.end; ++k) busy += steps[k].duration_s();
    b.step_s = busy / static_cast<double>(b.end - b.first);
    b.power_W = mean_power(power, b.start_s, b.end_s);
  }
  if (blocks.size() < 4)
    return {0, fmt::format("{} steps span under {} s: too short to detect a warm-up; none dropped",
                           n, 4 * kSettleBlock_s)};

  size_t first_ref = 0;
  while (blocks[first_ref].first < n / 2) ++first_ref;
  std::vector<double> ref_times;
  for (size_t i = first_ref; i < blocks.size(); ++i) ref_times.push_back(blocks[i].step_s);
  const Band time_band = band(ref_times, 0);
  const std::optional<Band> pw_band = power_band(blocks, first_ref);
  const auto ok = [&](size_t k) {
    if (k >= blocks.size()) return true;
    if (!time_band.inside(blocks[k].step_s)) return false;
    return !pw_band || !blocks[k].power_W || pw_band->inside(*blocks[k].power_W);
  };
  size_t start = first_ref;
  for (size_t k = 0; k < first_ref; ++k)
    if (ok(k) && ok(k + 1)) {
      start = k;
      break;
    }
  const size_t first = blocks[start].first;
  std::string power_part = pw_band ? fmt::format(" and mean power within {:.1f} W of {:.1f} W",
                                                 pw_band->tol, pw_band->ref)
                                   : std::string(" (no power readings to judge)");
  return {first,
          fmt::format("{}: mean step time per {} s block within {:.2f} ms of {:.2f} ms{} (the "
                      "second half's median) from there on",
                      first == 0 ? std::string("no warm-up found")
                                 : fmt::format("dropped {} warm-up step(s), {:.3f} s", first,
                                               steps[first].t_start_s - steps[0].t_start_s),
                      kSettleBlock_s, 1e3 * time_band.tol, 1e3 * time_band.ref, power_part)};
}

SteadyTime settle_time(double t0_s_in, double t1_s_in, const detail::Cumulative& power) {
  // The driver's power buffer starts a little after the trace (the first drain, ~20 ms in) and
  // may end a little before it: judge the part it covers.
  double t0_s = t0_s_in, t1_s = t1_s_in;
  if (power.t_s.size() >= 2) {
    t0_s = std::max(t0_s, power.t_s.front());
    t1_s = std::min(t1_s, power.t_s.back());
  }
  const double span = t1_s - t0_s;
  if (span < 4 * kSettleBlock_s || !power.covers(t0_s, t1_s))
    return {t0_s_in, t1_s_in,
            fmt::format("{:.2f} s without power readings over {} s blocks: nothing dropped",
                        t1_s_in - t0_s_in, kSettleBlock_s)};
  std::vector<Block> blocks;
  // Blocks of kSettleBlock_s, but never more blocks than power readings: a trace with a long gap
  // (or one corrupt time stamp) must not ask for a block per half second of the gap.
  const double block_s =
      std::max(kSettleBlock_s, span / static_cast<double>(std::max<size_t>(4, power.t_s.size())));
  const auto count = static_cast<size_t>(std::floor(span / block_s));
  for (size_t i = 0; i < count; ++i) {
    Block b;
    b.start_s = t0_s + static_cast<double>(i) * block_s;
    b.end_s = i + 1 == count ? t1_s : b.start_s + block_s;  // last block takes the rest
    b.power_W = mean_power(power, b.start_s, b.end_s);
    blocks.push_back(b);
  }
  // A busy stretch that stands clear of quiet ones before or after it: the work is there, however
  // long the command took to start.
  if (auto busy = busy_phase(blocks)) {
    const Band hb = busy->band;
    const auto busy_ok = [&](size_t k) { return hb.inside(*blocks[k].power_W); };
    size_t start = busy->first, last = busy->last;
    while (start < last && !(busy_ok(start) && busy_ok(start + 1))) ++start;
    while (last > start && !(busy_ok(last) && busy_ok(last - 1))) --last;
    const SteadyTime out{start == 0 ? t0_s_in : blocks[start].start_s,
                         last + 1 == blocks.size() ? t1_s_in : blocks[last].end_s, ""};
    return {out.start_s, out.end_s,
            fmt::format("the GPU was busy from {:.2f} s to {:.2f} s of the {:.2f} s: dropped "
                        "{:.2f} s before (the command starting) and {:.2f} s after; kept the {} s "
                        "blocks whose mean power is within {:.1f} W of {:.1f} W (busy-phase "
                        "reference, {:.1f} W while not busy)",
                        out.start_s - t0_s_in, out.end_s - t0_s_in, t1_s_in - t0_s_in,
                        out.start_s - t0_s_in, t1_s_in - out.end_s, block_s, hb.tol, hb.ref,
                        busy->quiet_W)};
  }
  const double mid = t0_s + span / 2;
  size_t first_ref = 0;
  while (blocks[first_ref].start_s < mid) ++first_ref;
  const Band pw = *power_band(blocks, first_ref);
  const auto ok = [&](size_t k) { return pw.inside(*blocks[k].power_W); };
  size_t start = first_ref;
  for (size_t k = 0; k + 1 < first_ref; ++k)
    if (ok(k) && ok(k + 1)) {
      start = k;
      break;
    }
  size_t last = blocks.size() - 1;
  for (size_t k = blocks.size() - 1; k > first_ref; --k)
    if (ok(k) && ok(k - 1)) {
      last = k;
      break;
    }
  // Nothing dropped at an end keeps that end where it was asked to be.
  const SteadyTime out{start == 0 ? t0_s_in : blocks[start].start_s,
                       last + 1 == blocks.size() ? t1_s_in : blocks[last].end_s, ""};
  return {
      out.start_s, out.end_s,
      fmt::format("dropped {:.2f} s of warm-up and {:.2f} s of tail: kept the {} s blocks whose "
                  "mean power is within {:.1f} W of {:.1f} W (second-half reference)",
                  out.start_s - t0_s_in, t1_s_in - out.end_s, block_s, pw.tol, pw.ref)};
}

namespace {

// y = a + b t by least squares, with the standard error of b; nullopt under 3 points.
std::optional<Slope> fit_slope(const std::vector<double>& t, const std::vector<double>& y,
                               double scale) {
  const size_t n = t.size();
  if (n < 3) return std::nullopt;
  double tm = 0, ym = 0;
  for (size_t i = 0; i < n; ++i) {
    tm += t[i] / static_cast<double>(n);
    ym += y[i] / static_cast<double>(n);
  }
  double stt = 0, sty = 0;
  for (size_t i = 0; i < n; ++i) {
    stt += (t[i] - tm) * (t[i] - tm);
    sty += (t[i] - tm) * (y[i] - ym);
  }
  if (!(stt > 0)) return std::nullopt;
  const double b = sty / stt;
  double ss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = y[i] - ym - b * (t[i] - tm);
    ss += r * r;
  }
  const double se = std::sqrt(ss / static_cast<double>(n - 2) / stt);
  return Slope{60 * b * scale, 60 * se * scale};
}

}  // namespace

TrailingSlopes trailing_slopes(const Trace& trace, double t0_s, double t1_s, int gpu) {
  std::vector<double> tt, temp, tp, power;
  TrailingSlopes out;
  // Samples are time-ordered: start at the window, not at the beginning of a long run.
  auto first = std::lower_bound(trace.samples.begin(), trace.samples.end(), t0_s,
                                [](const Sample& s, double t) { return s.t_s < t; });
  for (auto it = first; it != trace.samples.end() && it->t_s <= t1_s; ++it) {
    const Sample& s = *it;
    if (s.gpu != gpu) continue;
    ++out.samples;
    if (s.temp_C) {
      tt.push_back(s.t_s - t0_s);
      temp.push_back(*s.temp_C);
    }
    const std::optional<double> p = s.power_W ? s.power_W : s.power_avg_W;
    if (p) {
      tp.push_back(s.t_s - t0_s);
      power.push_back(*p);
    }
  }
  out.temp_C = fit_slope(tt, temp, 1.0);
  double mean_W = 0;
  for (double p : power) mean_W += p / static_cast<double>(power.size());
  if (mean_W > 0) out.power_rel = fit_slope(tp, power, 1 / mean_W);
  return out;
}

bool slopes_flat(const TrailingSlopes& s, double temp_C_per_min, double power_rel_per_min) {
  auto flat = [](const std::optional<Slope>& sl, double tol) {
    return !sl || std::abs(sl->per_min) - 2 * sl->se_per_min <= tol;
  };
  return flat(s.temp_C, temp_C_per_min) && flat(s.power_rel, power_rel_per_min);
}

}  // namespace regime
