#include "analysis/series.hpp"

#include <algorithm>
#include <cmath>

namespace regime::detail {

double Cumulative::at(double t) const {
  if (t_s.empty()) return 0;
  if (t <= t_s.front()) return F_J.front();
  if (t >= t_s.back()) return F_J.back();
  const size_t i = static_cast<size_t>(std::upper_bound(t_s.begin(), t_s.end(), t) - t_s.begin());
  const double t0 = t_s[i - 1], t1 = t_s[i];
  if (t1 <= t0) return F_J[i];
  return F_J[i - 1] + (F_J[i] - F_J[i - 1]) * (t - t0) / (t1 - t0);
}

std::optional<CounterReads> counter_reads(std::span<const Sample* const> samples, double a,
                                          double b) {
  // The driver updates the counter about every 100 ms; reads in between repeat the old value. A
  // repeat means "not updated yet", not "no energy used", so only the first read of each value is
  // kept (and the last read, so the readings still reach the end). Interpolating between raw reads
  // instead puts false flat steps into short blocks (docs/analysis.md "Energy").
  CounterReads r;
  Cumulative& c = r.F;
  const Sample* last = nullptr;
  for (const Sample* s : samples) {
    if (!s->energy_J) continue;
    const double since_last_s = last ? s->t_s - last->t_s : kCounterUpdatePeriod_s;
    last = s;
    if (!c.F_J.empty() && *s->energy_J == c.F_J.back()) continue;
    c.t_s.push_back(s->t_s);
    c.F_J.push_back(*s->energy_J);
    r.max_age_s.push_back(std::clamp(since_last_s, 0.0, kCounterUpdatePeriod_s));
  }
  if (last && c.t_s.back() != last->t_s) {
    // A repeat: its value is older than this read by more than the gap since it first appeared,
    // an age the other reads do not tell; it stays where it was read.
    c.t_s.push_back(last->t_s);
    c.F_J.push_back(*last->energy_J);
    r.max_age_s.push_back(0);
  }
  if (!c.covers(a, b)) return std::nullopt;
  // Only the readings that bracket [a, b] must be monotone: a reset elsewhere does not matter.
  const size_t lo =
      static_cast<size_t>(std::upper_bound(c.t_s.begin(), c.t_s.end(), a) - c.t_s.begin() - 1);
  const size_t hi =
      static_cast<size_t>(std::lower_bound(c.t_s.begin(), c.t_s.end(), b) - c.t_s.begin());
  for (size_t i = lo + 1; i <= hi && i < c.t_s.size(); ++i)
    if (c.F_J[i] < c.F_J[i - 1]) return std::nullopt;
  return r;
}

Cumulative placed_at_updates(const CounterReads& reads) {
  Cumulative out = reads.F;
  for (size_t i = 0; i < out.t_s.size(); ++i) out.t_s[i] -= 0.5 * reads.max_age_s[i];
  // Dense reads may be placed out of order by a few ms; time must not run backwards.
  for (size_t i = 1; i < out.t_s.size(); ++i) out.t_s[i] = std::max(out.t_s[i], out.t_s[i - 1]);
  return out;
}

Cumulative integrate_power(std::span<const double> t_s, std::span<const double> power_W) {
  Cumulative c;
  c.t_s.assign(t_s.begin(), t_s.end());
  c.F_J.resize(t_s.size());
  double sum = 0;
  for (size_t i = 0; i < t_s.size(); ++i) {
    if (i > 0) sum += 0.5 * (power_W[i] + power_W[i - 1]) * (t_s[i] - t_s[i - 1]);
    c.F_J[i] = sum;
  }
  return c;
}

namespace {

// As integrate_power over the samples that have the field, summed as it goes: no copy of the
// readings is made, and a trace of millions of samples needs its integral's room only.
template <typename Field>
Cumulative integrate_field(std::span<const Sample* const> samples, Field field) {
  Cumulative c;
  c.t_s.reserve(samples.size());
  c.F_J.reserve(samples.size());
  double sum = 0, last_t = 0, last_p = 0;
  for (const Sample* s : samples) {
    if (const auto& v = field(*s)) {
      if (!c.t_s.empty()) sum += 0.5 * (*v + last_p) * (s->t_s - last_t);
      c.t_s.push_back(s->t_s);
      c.F_J.push_back(sum);
      last_t = s->t_s;
      last_p = *v;
    }
  }
  return c;
}

Cumulative integrate_points(std::span<const PowerPoint> points) {
  std::vector<double> t, p;
  t.reserve(points.size());
  p.reserve(points.size());
  for (const PowerPoint& pt : points) {
    t.push_back(pt.t_s);
    p.push_back(pt.power_W);
  }
  return integrate_power(t, p);
}

// The power integral at t, carried past its ends at the mean power of its first or last interval:
// only used within kShapeEdgeSlack_s of an end.
double extended_at(const Cumulative& power, double t) {
  const size_t n = power.t_s.size();
  auto slope = [&](size_t i) {
    const double dt = power.t_s[i + 1] - power.t_s[i];
    return dt > 0 ? (power.F_J[i + 1] - power.F_J[i]) / dt : 0.0;
  };
  if (t < power.t_s.front()) return power.F_J.front() - slope(0) * (power.t_s.front() - t);
  if (t > power.t_s.back()) return power.F_J.back() + slope(n - 2) * (t - power.t_s.back());
  return power.at(t);
}

}  // namespace

Cumulative shape_counter_by_power(const Cumulative& counter, const Cumulative& power) {
  Cumulative out;
  if (counter.t_s.empty()) return out;
  size_t j = 0;             // walks the power points
  double joules_per_J = 1;  // the last shaped segment's counter joules per power joule
  for (size_t i = 0; i + 1 < counter.t_s.size(); ++i) {
    const double t0 = counter.t_s[i], t1 = counter.t_s[i + 1];
    const double F0 = counter.F_J[i], dF = counter.F_J[i + 1] - F0;
    out.t_s.push_back(t0);
    out.F_J.push_back(F0);
    if (!power.covers(t0 + kShapeEdgeSlack_s, t1 - kShapeEdgeSlack_s) || !(t1 > t0))
      continue;  // stays linear
    const double P0 = extended_at(power, t0), dP = extended_at(power, t1) - P0;
    if (!(dP > 0)) continue;
    joules_per_J = dF / dP;
    while (j < power.t_s.size() && power.t_s[j] <= t0) ++j;
    for (; j < power.t_s.size() && power.t_s[j] < t1; ++j) {
      out.t_s.push_back(power.t_s[j]);
      out.F_J.push_back(F0 + dF * (power.F_J[j] - P0) / dP);
    }
  }
  const double t_last = counter.t_s.back(), F_last = counter.F_J.back();
  out.t_s.push_back(t_last);
  out.F_J.push_back(F_last);
  if (power.t_s.size() >= 2 && power.t_s.back() > t_last && power.t_s.front() <= t_last) {
    const double P_last = power.at(t_last);
    for (j = static_cast<size_t>(std::upper_bound(power.t_s.begin(), power.t_s.end(), t_last) -
                                 power.t_s.begin());
         j < power.t_s.size(); ++j) {
      out.t_s.push_back(power.t_s[j]);
      out.F_J.push_back(F_last + joules_per_J * (power.F_J[j] - P_last));
    }
  }
  return out;
}

namespace {
EnergyFunction power_energy_function(std::span<const Sample* const> samples,
                                     std::span<const PowerPoint> power_points, double a, double b) {
  if (Cumulative c = integrate_points(power_points); c.covers(a, b))
    return {EnergySource::InstantPower, "driver power buffer, trapezoid integral", std::move(c)};
  if (Cumulative c = integrate_field(samples, [](const Sample& s) { return s.power_W; });
      c.covers(a, b))
    return {EnergySource::InstantPower, "polled power_W, trapezoid integral", std::move(c)};
  if (Cumulative c = integrate_field(samples, [](const Sample& s) { return s.power_avg_W; });
      c.covers(a, b))
    return {EnergySource::AveragedPower, "polled power_avg_W, trapezoid integral", std::move(c)};
  return {EnergySource::None, "no energy counter or power readings cover the window", {}};
}
}  // namespace

EnergyFunction best_energy_function(std::span<const Sample* const> samples,
                                    std::span<const PowerPoint> power_points, double a, double b) {
  EnergyFunction power = power_energy_function(samples, power_points, a, b);
  if (auto reads = counter_reads(samples, a, b)) {
    if (power.source == EnergySource::None)
      return {EnergySource::Counter, "cumulative energy counter, interpolated at the window edges",
              std::move(reads->F)};
    return {EnergySource::Counter,
            "cumulative energy counter, shaped between reads by the " + power.detail,
            shape_counter_by_power(placed_at_updates(*reads), power.F)};
  }
  return power;
}

WindowPower window_power(std::span<const Sample* const> samples,
                         std::span<const PowerPoint> power_points, double a, double b,
                         double window_s) {
  WindowPower out;
  if (!(window_s > 0) || !(b - a >= window_s)) return out;
  Cumulative F;
  if (Cumulative c = integrate_points(power_points); c.covers(a, b)) {
    F = std::move(c);
    out.source = "driver power buffer";
  } else if (Cumulative p = integrate_field(samples, [](const Sample& s) { return s.power_W; });
             p.covers(a, b)) {
    F = std::move(p);
    out.source = "polled power_W";
  } else if (Cumulative v = integrate_field(samples, [](const Sample& s) { return s.power_avg_W; });
             v.covers(a, b)) {
    F = std::move(v);
    out.source = "polled power_avg_W";
  } else {
    return out;
  }
  // Never more windows than readings: a long gap (or one corrupt time stamp) must not ask for a
  // window per second of it; such a span gets wider windows instead.
  window_s = std::max(window_s, (b - a) / static_cast<double>(std::max<size_t>(1, F.t_s.size())));
  const auto n = static_cast<size_t>(std::floor((b - a) / window_s));
  out.means_W.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const double lo = a + static_cast<double>(i) * window_s;
    out.means_W.push_back(F.between(lo, lo + window_s) / window_s);
  }
  std::sort(out.means_W.begin(), out.means_W.end());
  return out;
}

std::optional<Span> energy_coverage(std::span<const Sample* const> samples,
                                    std::span<const PowerPoint> power_points) {
  std::optional<Span> widest;
  auto consider = [&](double from_s, double to_s) {
    if (to_s > from_s && (!widest || to_s - from_s > widest->to_s - widest->from_s))
      widest = Span{from_s, to_s};
  };
  if (power_points.size() >= 2) consider(power_points.front().t_s, power_points.back().t_s);
  auto span_of = [&](auto has) {
    const Sample *first = nullptr, *last = nullptr;
    for (const Sample* s : samples)
      if (has(*s)) {
        if (!first) first = s;
        last = s;
      }
    if (first) consider(first->t_s, last->t_s);
  };
  span_of([](const Sample& s) { return s.energy_J.has_value(); });
  span_of([](const Sample& s) { return s.power_W.has_value(); });
  span_of([](const Sample& s) { return s.power_avg_W.has_value(); });
  return widest;
}

Cumulative power_integral_for_settling(std::span<const Sample* const> samples,
                                       std::span<const PowerPoint> power_points) {
  if (power_points.size() >= 2) return integrate_points(power_points);
  Cumulative c = integrate_field(samples, [](const Sample& s) { return s.power_W; });
  if (c.t_s.size() >= 2) return c;
  c = integrate_field(samples, [](const Sample& s) { return s.power_avg_W; });
  if (c.t_s.size() >= 2) return c;
  // Last resort: the counter itself (coarse, but it still shows power settling).
  Cumulative counter;
  for (const Sample* s : samples)
    if (s->energy_J) {
      counter.t_s.push_back(s->t_s);
      counter.F_J.push_back(*s->energy_J);
    }
  return counter;
}

}  // namespace regime::detail
