#include "export/rolling_regime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace regime::exporter {
namespace {

// One sample a second: `power_W` under a 500 W limit, the given reasons, energy integrated.
Sample sample(double t_s, double power_W, uint64_t reasons, double util_pct) {
  Sample s;
  s.t_s = t_s;
  s.power_W = power_W;
  s.power_avg_W = power_W;
  s.energy_J = power_W * t_s;
  s.temp_C = 55;
  s.sm_MHz = reasons & reason::kSwPowerCap ? 1500 : 1980;
  s.util_pct = util_pct;
  s.limit_W = 500;
  s.reasons = reasons;
  return s;
}

GpuInfo h200() {
  GpuInfo g;
  g.name = "NVIDIA H200";
  g.min_limit_W = 200;
  g.max_limit_W = 700;
  g.default_limit_W = 700;
  g.current_limit_W = g.enforced_limit_W = 500;
  g.max_sm_MHz = 1980;
  g.slowdown_temp_C = 89;
  return g;
}

TEST(RollingRegime, NamesNothingUntilTheWindowIsLongEnough) {
  RollingRegime r(30);
  EXPECT_FALSE(r.classify(h200()));
  r.add(sample(100, 499, reason::kSwPowerCap, 100), {});
  EXPECT_FALSE(r.classify(h200()));
}

TEST(RollingRegime, KeepsOnlyTheWindowAndFollowsTheGpu) {
  RollingRegime r(10);
  double t = 0;
  for (; t < 150; t += 1)
    r.add(sample(t, 499, reason::kSwPowerCap, 100), {{t, 499}, {t + 0.5, 499}});
  // What is kept is the history searched for a cycle of phases, longer than the window.
  EXPECT_EQ(r.history_s(), kPhaseHistory_s);
  EXPECT_EQ(r.history().samples.front().t_s, 149 - kPhaseHistory_s);
  EXPECT_EQ(r.history().samples.size(), 121u);
  EXPECT_EQ(r.history().power_points.front().t_s, 149 - kPhaseHistory_s);
  auto report = r.classify(h200());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->regime, Regime::CapBound);
  // The work ends: ten seconds later the window holds only idle samples.
  for (const double end = t + 11; t < end; t += 1) r.add(sample(t, 75, reason::kIdle, 0), {});
  report = r.classify(h200());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->regime, Regime::Idle);
  r.clear();
  EXPECT_FALSE(r.classify(h200()));
}

// A job that alternates `high_s` cap-bound seconds at 499 W with `low_s` host-bound ones at
// 130 W, one sample and four power points a second, from t = 0 to `end_s`.
void add_phased(RollingRegime& r, double end_s, double high_s = 8, double low_s = 8) {
  double energy_J = 0;
  for (double t = 0; t < end_s; t += 1) {
    const bool high = std::fmod(t, high_s + low_s) < high_s;
    const double power_W = high ? 499 : 130;
    Sample x = sample(t, power_W, high ? reason::kSwPowerCap : uint64_t{0}, high ? 100 : 15);
    x.energy_J = energy_J;  // the counter: what the seconds before drew
    energy_J += power_W;
    r.add(x, {{t, power_W}, {t + 0.25, power_W}, {t + 0.5, power_W}, {t + 0.75, power_W}});
  }
}

TEST(RollingRegime, AJobOfPhasesIsNamedByThePhaseHoldingMostEnergyOverWholeCycles) {
  RollingRegime r(30);
  add_phased(r, 100);
  const auto report = r.classify(h200());
  ASSERT_TRUE(report);
  ASSERT_EQ(report->phases.size(), 2u);
  EXPECT_EQ(report->regime, Regime::CapBound);
  EXPECT_EQ(report->phases[0].regime, Regime::CapBound);
  ASSERT_TRUE(report->phase_cycle_s);
  EXPECT_NEAR(*report->phase_cycle_s, 16, 1);
  // Two whole cycles (32 s), not the 30 s asked for: half the time in each phase, and the busy
  // phase's share of the energy 499 / (499 + 130).
  EXPECT_NEAR(report->measurement.window_end_s - report->measurement.window_start_s, 32, 1);
  EXPECT_NEAR(report->phases[0].time_fraction, 0.5, 0.04);
  EXPECT_NEAR(report->phases[0].energy_fraction, 499.0 / 629, 0.03);
}

TEST(RollingRegime, TheJobsMixDoesNotSwingWithWhereTheWindowEnds) {
  // Wherever the last sample falls in the cycle, whole cycles hold the same mix of the phases: the
  // window's mean power stays at (499 + 130) / 2 W, where 30 s would hold 14 to 16 s of the busy
  // phase, 302 to 327 W. Each phase's own share moves only by where the finder's 0.5 s blocks
  // place its edges.
  std::vector<double> power_W;
  for (double end_s : {96.0, 100.0, 104.0, 108.0, 110.0}) {
    RollingRegime r(30);
    add_phased(r, end_s);
    const auto report = r.classify(h200());
    ASSERT_TRUE(report);
    ASSERT_EQ(report->phases.size(), 2u) << end_s;
    EXPECT_EQ(report->regime, Regime::CapBound) << end_s;
    EXPECT_NEAR(report->phases[0].energy_fraction, 499.0 / 629, 0.06) << end_s;
    power_W.push_back(report->measurement.avg_power_W);
  }
  const auto [lo, hi] = std::minmax_element(power_W.begin(), power_W.end());
  EXPECT_NEAR(*lo, 314.5, 6);
  EXPECT_LT(*hi - *lo, 6);
}

TEST(RollingRegime, ASteadyJobKeepsItsWindowAndHasNoPhases) {
  RollingRegime r(30);
  for (double t = 0; t < 100; t += 1)
    r.add(sample(t, 499, reason::kSwPowerCap, 100), {{t, 499}, {t + 0.5, 499}});
  const auto report = r.classify(h200());
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->phases.empty());
  EXPECT_NEAR(report->measurement.window_end_s - report->measurement.window_start_s, 30, 1);
}

TEST(RollingRegime, AWindowOfWholeCyclesAtLeastTwo) {
  EXPECT_EQ(phased_window_s(30, std::nullopt, 120), 30);
  EXPECT_EQ(phased_window_s(30, 16.0, 120), 32);
  EXPECT_EQ(phased_window_s(30, 10.0, 120), 30);
  EXPECT_EQ(phased_window_s(30, 7.0, 120), 35);
  EXPECT_EQ(phased_window_s(10, 40.0, 120), 80);
  // Fewer kept than wanted: as many whole cycles as there are, else all that is kept.
  EXPECT_EQ(phased_window_s(40, 16.0, 40), 32);
  EXPECT_EQ(phased_window_s(10, 40.0, 60), 60);
}

}  // namespace
}  // namespace regime::exporter
