#include "export/served_energy.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace regime::exporter {
namespace {

TEST(ServedEnergy, NothingBeforeTheFirstReadOfTheCounter) {
  ServedEnergy e;
  e.advance({{0, 100}, {1, 100}});
  EXPECT_FALSE(e.value_J());
  e.anchor(1000);
  EXPECT_DOUBLE_EQ(*e.value_J(), 1000);
}

TEST(ServedEnergy, TheBufferAdvancesItBetweenReadsAcrossRounds) {
  ServedEnergy e;
  e.anchor(1000);
  e.advance({{0, 100}, {1, 100}, {2, 300}});  // 100 J, then 200 J (trapezoid)
  EXPECT_DOUBLE_EQ(*e.value_J(), 1300);
  e.advance({{3, 300}});  // from the last point of the round before
  EXPECT_DOUBLE_EQ(*e.value_J(), 1600);
  e.advance({{3, 300}});  // a point already taken adds nothing
  EXPECT_DOUBLE_EQ(*e.value_J(), 1600);
}

TEST(ServedEnergy, NeverGoesBackAndTakesTheCounterWhenItIsAhead) {
  ServedEnergy e;
  e.anchor(1000);
  e.advance({{0, 100}, {2, 100}});
  EXPECT_DOUBLE_EQ(*e.value_J(), 1200);
  e.anchor(1150);  // the buffer ran ahead of the counter: held until the counter catches up
  EXPECT_DOUBLE_EQ(*e.value_J(), 1200);
  e.anchor(1250);
  EXPECT_DOUBLE_EQ(*e.value_J(), 1250);
}

TEST(ServedEnergy, ACounterBelowItsLastReadWasResetAndIsServedAsItIs) {
  ServedEnergy e;
  e.anchor(5000);
  e.anchor(12);
  EXPECT_DOUBLE_EQ(*e.value_J(), 12);
  e.forget();
  EXPECT_FALSE(e.value_J());
  e.advance({{10, 100}});
  e.anchor(20);
  e.advance({{11, 100}});  // the first point after forget() only started
  EXPECT_DOUBLE_EQ(*e.value_J(), 120);
}

// A GPU drawing 250 W with a 40 W swing every second, its buffer points 20 ms apart drained every
// 1 s round and its counter read every 10th round: what is served at every round stays within
// 0.1% of the true energy, and never goes back.
TEST(ServedEnergy, TracksTheCounterItIsNotReadingEveryRound) {
  auto power_W = [](double t) { return 250 + 40 * std::sin(2 * M_PI * t); };
  double true_J = 0, served_before = 0, t = 0;
  ServedEnergy e;
  for (int round = 0; round < 120; ++round) {
    std::vector<PowerPoint> points;
    for (int i = 0; i < 50; ++i) {
      const double next = t + 0.02;
      true_J += 0.5 * (power_W(t) + power_W(next)) * 0.02;
      t = next;
      points.push_back({t, power_W(t)});
    }
    e.advance(points);
    if (round % 10 == 0) e.anchor(true_J);
    ASSERT_TRUE(e.value_J());
    EXPECT_NEAR(*e.value_J(), true_J, 1e-3 * true_J) << "round " << round;
    EXPECT_GE(*e.value_J(), served_before);
    served_before = *e.value_J();
  }
}

// A buffer that reads 5% high: the served value is held at each read until the counter catches
// up, so it stays within one period's error of the counter instead of drifting further each period.
TEST(ServedEnergy, ABufferThatReadsHighDoesNotCarryItAwayFromTheCounter) {
  ServedEnergy e;
  double counter_J = 0, t = 0;
  e.anchor(counter_J);
  for (int period = 0; period < 100; ++period) {
    for (int i = 0; i < 500; ++i) {  // 10 s of points 20 ms apart at 200 W, read as 210 W
      t += 0.02;
      e.advance({{t, 210}});
      counter_J += 200 * 0.02;
    }
    e.anchor(counter_J);
    EXPECT_LE(*e.value_J() - counter_J, 0.05 * 2000 + 1e-6) << "period " << period;
  }
}

}  // namespace
}  // namespace regime::exporter
