#include "export/rolling_regime.hpp"

#include <gtest/gtest.h>

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
  for (; t < 30; t += 1)
    r.add(sample(t, 499, reason::kSwPowerCap, 100), {{t, 499}, {t + 0.5, 499}});
  EXPECT_EQ(r.window().samples.front().t_s, 19);
  EXPECT_EQ(r.window().samples.size(), 11u);
  EXPECT_EQ(r.window().power_points.front().t_s, 19);
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

}  // namespace
}  // namespace regime::exporter
