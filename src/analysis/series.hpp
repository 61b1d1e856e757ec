#pragma once
// Time series pulled out of a Trace for one GPU, and cumulative energy functions built from them.
// Internal to src/analysis/; measure.hpp is the public face.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/measurement.hpp"
#include "trace/trace.hpp"

namespace regime::detail {

// A non-decreasing cumulative energy F(t) known at points and linear in between, so the energy
// of [a, b] is F(b) - F(a). From the counter, F is the counter itself; from power, F is the
// trapezoid integral.
struct Cumulative {
  std::vector<double> t_s;
  std::vector<double> F_J;
  bool covers(double a, double b) const {
    return t_s.size() >= 2 && t_s.front() <= a && t_s.back() >= b;
  }
  double at(double t) const;  // clamped to the ends
  double between(double a, double b) const { return at(b) - at(a); }
};

// Counter readings of the samples, each value at the read that first saw it, and how old that
// value may have been when read; nullopt when the counter goes backwards inside [a, b] (a reset or
// wrap) or does not bracket it.
struct CounterReads {
  Cumulative F;
  std::vector<double> max_age_s;  // one per point of F
};
std::optional<CounterReads> counter_reads(std::span<const Sample* const> samples, double a,
                                          double b);

// The driver sets the counter every kCounterUpdatePeriod_s (100 ms on an H200: the median gap
// between new values in every kept H200 trace), and a read returns the value of the last update:
// up to one period old, and no older than the read before it. Read every few seconds, each value
// lags its read by a share of the period that stays the same all run (the reads come whole
// seconds apart, the updates a steady 100 ms), so a window whose edges see different power is
// off by lag x (power at its end - power at its start): 0.12% (read every 5 s) and 0.23% (read at
// its ends) on a live H200 transformer probe.
// Placing each value at the middle of the span it may have been set in halves the worst case and
// removes the bias (docs/analysis.md "Energy").
inline constexpr double kCounterUpdatePeriod_s = 0.1;
Cumulative placed_at_updates(const CounterReads& reads);
// Trapezoid integral of power points (t, W).
Cumulative integrate_power(std::span<const double> t_s, std::span<const double> power_W);

// The sources in preference order, for one window: counter, instantaneous power (driver buffer
// first, then polled power_W), averaged power. `source` is None when nothing covers [a, b].
struct EnergyFunction {
  EnergySource source = EnergySource::None;
  std::string detail;  // e.g. "driver power buffer", "polled power_W"
  Cumulative F;
};

// The counter shaped by power between its reads: at a time t between reads (t0, F0) and
// (t1, F1), F(t) = F0 + (F1 - F0) * P(t0, t) / P(t0, t1), where P is the power integral. The
// counter is read only every few seconds (a read costs ~4 ms on an H200), and a window edge that
// falls in a segment where power changes (the end of a warm-up) is badly placed by a straight
// line: the counter fixes the energy of each segment, power says where in it the energy went.
// Segments power does not cover stay linear. The run's first read comes a few ms before the
// buffer's first point (points from before the run are dropped) and a last read may come after
// its last: power that stops short of a read by at most kShapeEdgeSlack_s (five of the buffer's
// 20 ms points) is carried to it at its edge interval's mean, else a run read only at its ends
// would be one linear segment. Power past the last read (a value placed before its read, the
// buffer drained after it) carries the last segment on at that segment's joules per power joule.
inline constexpr double kShapeEdgeSlack_s = 0.1;
Cumulative shape_counter_by_power(const Cumulative& counter, const Cumulative& power);
EnergyFunction best_energy_function(std::span<const Sample* const> samples,
                                    std::span<const PowerPoint> power_points, double a, double b);

// Mean power over consecutive windows of `window_s` inside [a, b] (a shorter remainder is left
// out), from the finest instantaneous power that covers [a, b]: the driver's buffer, else polled
// power_W, else the driver's averaged power. Sorted ascending; empty when nothing covers it.
struct WindowPower {
  std::vector<double> means_W;
  std::string source;  // "driver power buffer", "polled power_W", "polled power_avg_W"
};
WindowPower window_power(std::span<const Sample* const> samples,
                         std::span<const PowerPoint> power_points, double a, double b,
                         double window_s);

// The widest span [first, last] that one energy source (counter reads, the driver's power buffer,
// polled power_W or power_avg_W) covers; nullopt when none has two readings. A step outside it
// cannot be measured: the sampler may start after the work's first steps (a starved sampler
// thread), or stop before its last.
struct Span {
  double from_s = 0, to_s = 0;
};
std::optional<Span> energy_coverage(std::span<const Sample* const> samples,
                                    std::span<const PowerPoint> power_points);

// The best power series for judging settling (fine-grained power, not the slow counter):
// instantaneous, else averaged, else empty.
Cumulative power_integral_for_settling(std::span<const Sample* const> samples,
                                       std::span<const PowerPoint> power_points);

}  // namespace regime::detail
