#include "analysis/series.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace regime::detail {
namespace {

// Power is 100 W until t = 3 s, then 400 W; the counter is read only at 0 s and 5 s (as when
// reads are 5 s apart). The energy truly spent in [0, 4] s is 3*100 + 1*400 = 700 J.
Cumulative sparse_counter() { return {{0.0, 5.0}, {1000.0, 1000.0 + 300.0 + 800.0}}; }

Cumulative power_integral() {
  std::vector<double> t, p;
  for (int i = 0; i <= 500; ++i) {
    t.push_back(i * 0.01);
    p.push_back(t.back() < 3.0 ? 100.0 : 400.0);
  }
  return integrate_power(t, p);
}

TEST(ShapeCounterByPower, PlacesEnergyInsideASegmentWherePowerWent) {
  const Cumulative counter = sparse_counter();
  const Cumulative shaped = shape_counter_by_power(counter, power_integral());
  // A straight line between the reads says 1100 * 4/5 = 880 J: 26% off.
  EXPECT_NEAR(counter.between(0, 4), 880.0, 1e-9);
  EXPECT_NEAR(shaped.between(0, 4), 700.0, 2.0);
  // The counter still fixes each segment's total.
  EXPECT_NEAR(shaped.between(0, 5), 1100.0, 1e-9);
}

TEST(ShapeCounterByPower, KeepsTheCounterLevelWhenPowerReadsHigh) {
  // Power says 1500 J over the segment, the counter 1100 J: the counter's total wins, power only
  // distributes it.
  Cumulative counter = sparse_counter();
  std::vector<double> t{0, 5}, p{300, 300};
  const Cumulative shaped = shape_counter_by_power(counter, integrate_power(t, p));
  EXPECT_NEAR(shaped.between(0, 5), 1100.0, 1e-9);
  EXPECT_NEAR(shaped.between(0, 2.5), 550.0, 1e-6);
}

TEST(ShapeCounterByPower, SegmentsPowerDoesNotCoverStayLinear) {
  Cumulative counter{{0.0, 5.0, 10.0}, {0.0, 500.0, 1500.0}};
  std::vector<double> t, p;  // covers only the second segment, rising 100 -> 300 W
  for (int i = 0; i <= 50; ++i) {
    t.push_back(5 + i * 0.1);
    p.push_back(100 + 40 * (t.back() - 5));
  }
  const Cumulative shaped = shape_counter_by_power(counter, integrate_power(t, p));
  EXPECT_NEAR(shaped.between(0, 2.5), 250.0, 1e-9);  // linear
  EXPECT_NEAR(shaped.between(5, 10), 1000.0, 1e-9);
  // Power rises linearly 100 -> 300 W, so the first half of the second segment holds
  // (100+200)/2*2.5 = 375 of 1000 "power joules": 37.5% of the counter's 1000 J.
  EXPECT_NEAR(shaped.between(5, 7.5), 375.0, 1e-6);
}

// A counter read only at the run's ends, its first read 6 ms before the buffer's first point
// (as on the H200, where points from before the run are dropped): the whole run is still shaped
// by power, not one straight line from an idle start to a busy end.
TEST(ShapeCounterByPower, PowerStartingJustAfterTheFirstReadStillShapesTheSegment) {
  std::vector<double> t, p;
  for (int i = 0; i <= 1500; ++i) {  // 120 W for 5 s, then 680 W to 30 s, points 20 ms apart
    t.push_back(0.006 + i * 0.02);
    p.push_back(t.back() < 5 ? 120.0 : 680.0);
  }
  const Cumulative power = integrate_power(t, p);
  const double true_J = 120 * 5 + 680 * 25.006;
  const Cumulative counter{{0.0, t.back()}, {5000.0, 5000.0 + true_J}};
  const Cumulative shaped = shape_counter_by_power(counter, power);
  EXPECT_NEAR(shaped.between(10, 30) / 20, 680.0, 1.0);  // linear would say 544 W
  EXPECT_NEAR(shaped.between(0, t.back()), true_J, 1e-6);
  // Power that stops further than the slack from a read leaves that segment linear.
  const Cumulative late{{-1.0, t.back()}, {5000.0, 5000.0 + true_J + 120}};
  EXPECT_NEAR(shape_counter_by_power(late, power).between(10, 30) / 20,
              (true_J + 120) / (t.back() + 1), 1e-6);
}

// The counter as an H200 keeps it: set every 100 ms (at 0.04 s, 0.14 s, ...) to the energy spent
// so far, read every `period_s` from 0 s to 30 s. Power is 300 W until 10 s, then rises
// linearly to 600 W at 30 s, so a window's edges see different power; the buffer holds it every
// 20 ms.
struct LaggingCounterRun {
  std::vector<Sample> samples;
  std::vector<PowerPoint> points;
  static double power_W(double t) { return t < 10 ? 300 : 300 + 15 * (t - 10); }
  static double energy_J(double t) {  // exact integral of power_W from 0 (300 W before it too)
    if (t < 10) return 300 * t;
    return 3000 + 300 * (t - 10) + 7.5 * (t - 10) * (t - 10);
  }
  explicit LaggingCounterRun(double period_s) {
    for (int k = 0; k * period_s <= 30 + 1e-9; ++k) {
      Sample s;
      s.t_s = k * period_s;
      const double last_update_s = std::floor((s.t_s - 0.04) / 0.1) * 0.1 + 0.04;
      s.energy_J = 1e6 + energy_J(last_update_s);
      samples.push_back(s);
    }
    for (int i = 0; i <= 1500; ++i) points.push_back({0.006 + i * 0.02, power_W(0.006 + i * 0.02)});
  }
  double window_J(double a, double b) {
    std::vector<const Sample*> ptrs;
    for (const Sample& s : samples) ptrs.push_back(&s);
    EnergyFunction f = best_energy_function(ptrs, points, a, b);
    EXPECT_EQ(f.source, EnergySource::Counter);
    return f.F.between(a, b);
  }
};

TEST(CounterReads, EachValueIsPlacedAtTheMiddleOfTheSpanItMayHaveBeenSetIn) {
  Sample a, b, c, d;
  a.t_s = 0, a.energy_J = 10;
  b.t_s = 5, b.energy_J = 20;
  c.t_s = 5.01, c.energy_J = 21;  // 10 ms after the read before it: set within those 10 ms
  d.t_s = 5.02, d.energy_J = 21;  // a repeat: kept where it was read, to reach the end
  const std::vector<const Sample*> ptrs{&a, &b, &c, &d};
  const auto reads = counter_reads(ptrs, 0, 5.02);
  ASSERT_TRUE(reads.has_value());
  const Cumulative placed = placed_at_updates(*reads);
  ASSERT_EQ(placed.t_s.size(), 4u);
  EXPECT_NEAR(placed.t_s[0], -0.05, 1e-12);
  EXPECT_NEAR(placed.t_s[1], 4.95, 1e-12);
  EXPECT_NEAR(placed.t_s[2], 5.005, 1e-12);
  EXPECT_NEAR(placed.t_s[3], 5.02, 1e-12);
}

TEST(CounterReads, AValueReadLateIsNotChargedToAWindowWhoseEdgesSeeDifferentPower) {
  // Every read's value is 60 ms old (the updates at ...x.04 s, the reads at whole seconds).
  // Taken at its read, a window ending where power is 600 W and starting at 300 W would miss
  // 0.06 s x 300 W = 18 J of its 7,500 J (0.24%); placed half a period back it misses 3 J.
  for (double period_s : {5.0, 30.0}) {
    LaggingCounterRun run(period_s);
    const double a = 12, b = 30;
    const double true_J = LaggingCounterRun::energy_J(b) - LaggingCounterRun::energy_J(a);
    EXPECT_NEAR(run.window_J(a, b) / true_J - 1, 0, 0.0006) << "reads every " << period_s << " s";
  }
}

// Power past the last read (its value placed before it, the buffer drained after it) carries the
// last segment on, so a window reaching the last read is still the counter's.
TEST(ShapeCounterByPower, PowerPastTheLastReadCarriesTheLastSegmentOn) {
  std::vector<double> t, p;
  for (int i = 0; i <= 100; ++i) {
    t.push_back(i * 0.1);
    p.push_back(200);
  }
  const Cumulative counter{{0.0, 9.5}, {0.0, 0.99 * 200 * 9.5}};  // power reads 1% high
  const Cumulative shaped = shape_counter_by_power(counter, integrate_power(t, p));
  EXPECT_NEAR(shaped.between(9.5, 10), 0.99 * 200 * 0.5, 1e-9);
  EXPECT_NEAR(shaped.between(0, 10), 0.99 * 200 * 10, 1e-9);
}

TEST(WindowPower, AFarTimestampGetsWiderWindowsNotAWindowPerSecond) {
  // Five readings, the last 1e9 s later: 1 s windows would be 1e9 of them (found by the fuzzer:
  // a 28 GB allocation). Never more windows than readings.
  std::vector<Sample> samples(5);
  const double t[] = {0, 0.01, 0.02, 0.03, 1e9};
  std::vector<const Sample*> ptrs;
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i].t_s = t[i];
    samples[i].power_W = 100;
    ptrs.push_back(&samples[i]);
  }
  WindowPower w = window_power(ptrs, {}, 0, 1e9, 1.0);
  EXPECT_LE(w.means_W.size(), samples.size());
  EXPECT_FALSE(w.means_W.empty());
  for (double m : w.means_W) EXPECT_NEAR(m, 100, 1e-9);
  // An ordinary trace keeps its windows: 100 readings over 1 s, 0.1 s windows.
  std::vector<Sample> dense(101);
  ptrs.clear();
  for (size_t i = 0; i < dense.size(); ++i) {
    dense[i].t_s = 0.01 * static_cast<double>(i);
    dense[i].power_W = 200;
    ptrs.push_back(&dense[i]);
  }
  EXPECT_EQ(window_power(ptrs, {}, 0, 1, 0.1).means_W.size(), 10u);
}

}  // namespace
}  // namespace regime::detail
