#include "analysis/series.hpp"

#include <gtest/gtest.h>

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
