#include "plan/study_plan.hpp"

#include <gtest/gtest.h>

#include "support/gpu_info.hpp"

namespace regime::plan {
namespace {

GpuInfo t4() { return testing::gpu_with_limits("sim:t4", 60, 70, 70); }

GpuInfo h200() { return testing::gpu_with_limits("", 200, 700, 700); }

RegimeReport report(Regime r, double avg_power_W) {
  RegimeReport rep;
  rep.regime = r;
  rep.measurement.avg_power_W = avg_power_W;
  rep.measurement.energy_source = EnergySource::Counter;
  rep.measurement.mean_util_pct = 24.0;
  rep.measurement.max_temp_C = 88.0;
  return rep;
}

plan::ProbeResult probe(double cap_W, double e, Interval e_ci, double t, Interval t_ci) {
  plan::ProbeResult p;
  p.cap_W = cap_W;
  p.measurement.energy_per_step_J = e;
  p.measurement.energy_per_step_ci_J = e_ci;
  p.measurement.time_per_step_s = t;
  p.measurement.time_per_step_ci_s = t_ci;
  return p;
}

TEST(StudyPlan, CapBoundSweepsFromTheEnforcedLimitDown) {
  GpuInfo g = h200();
  g.enforced_limit_W = 500;  // a user's lower limit: the sweep starts there, the default stays in
  SweepPlan p = plan_sweep(report(Regime::CapBound, 498), g);
  ASSERT_TRUE(p.sweep);
  EXPECT_EQ(p.caps.front(), 700);
  EXPECT_EQ(p.caps[1], 500);
  EXPECT_EQ(p.caps.back(), 200);
  EXPECT_FALSE(p.controller_may_help);
}

TEST(StudyPlan, HeadroomSweepsFromTheObservedDrawDown) {
  SweepPlan p = plan_sweep(report(Regime::Headroom, 400), h200());
  ASSERT_TRUE(p.sweep);
  EXPECT_EQ(p.caps.front(), 700);
  EXPECT_LT(p.caps[1], 400 * 1.15);
  EXPECT_GE(p.caps[1], 400 * 1.15 - 35);  // the grid's step is 5% of 700 W
  EXPECT_EQ(p.caps.back(), 200);
}

TEST(StudyPlan, HeadroomWithAnUnknownDrawSweepsEveryCap) {
  RegimeReport r = report(Regime::Headroom, 0);
  r.measurement.energy_source = EnergySource::None;  // "0 W" is no reading, not no draw
  SweepPlan p = plan_sweep(r, h200());
  ASSERT_TRUE(p.sweep);
  EXPECT_EQ(p.caps.front(), 700);
  EXPECT_GE(p.caps[1], 650);
  EXPECT_EQ(p.caps.back(), 200);
  EXPECT_NE(p.why.find("draw is unknown"), std::string::npos) << p.why;
}

TEST(StudyPlan, ThermalBoundSweepsAndSaysAControllerMayHelp) {
  SweepPlan p = plan_sweep(report(Regime::ThermalBound, 650), h200());
  EXPECT_TRUE(p.sweep);
  EXPECT_TRUE(p.controller_may_help);
  EXPECT_NE(p.why.find("controller"), std::string::npos);
}

TEST(StudyPlan, UnderutilizedAndIdleAreNotSwept) {
  SweepPlan u = plan_sweep(report(Regime::Underutilized, 200), h200());
  EXPECT_FALSE(u.sweep);
  EXPECT_TRUE(u.caps.empty());
  EXPECT_NE(u.why.find("24.0%"), std::string::npos);
  EXPECT_NE(u.why.find("waste"), std::string::npos);
  EXPECT_FALSE(plan_sweep(report(Regime::Idle, 80), h200()).sweep);
}

TEST(StudyPlan, T4GridEndsAtTheMinimum) {
  SweepPlan p = plan_sweep(report(Regime::CapBound, 70), t4());
  EXPECT_EQ(p.caps, (std::vector<double>{70, 66.5, 63, 60}));
}

TEST(StudyCommand, QuotesTheCommandAndNamesEveryChoice) {
  SweepCommandInputs in{"nvml:0", "",         {"python3", "train.py", "--lr", "a b"},
                        "it's",   "adaptive", "max-slowdown:10"};
  EXPECT_EQ(sweep_command(in, {300, 250}),
            "regime sweep --device nvml:0 --caps 300,250 --strategy adaptive --objective "
            "max-slowdown:10 --step-regex 'it'\\''s' --actuate -- python3 train.py --lr 'a b'");
  SweepCommandInputs sim{"sim:t4", "sim:vgg16", {}, "", "exhaustive", "energy"};
  EXPECT_EQ(sweep_command(sim, {70, 66.5}),
            "regime sweep --device sim:t4 --caps 70,66.5 --strategy exhaustive --objective energy "
            "--workload sim:vgg16 --actuate");
}

TEST(StudyChange, IntervalFromTheCornersOfBothIntervals) {
  auto def = probe(700, 100, {98, 102}, 1.0, {0.99, 1.01});
  auto cap = probe(300, 80, {79, 81}, 1.2, {1.18, 1.22});
  Change e = energy_change(cap, def);
  EXPECT_NEAR(e.pct, -20, 1e-9);
  ASSERT_TRUE(e.ci_pct);
  EXPECT_NEAR(e.ci_pct->first, 100 * (79.0 / 102 - 1), 1e-9);
  EXPECT_NEAR(e.ci_pct->second, 100 * (81.0 / 98 - 1), 1e-9);
  Change t = time_change(cap, def);
  EXPECT_NEAR(t.pct, 20, 1e-9);
  EXPECT_NEAR(t.ci_pct->first, 100 * (1.18 / 1.01 - 1), 1e-9);
}

TEST(StudyChange, NoIntervalWithoutIntervals) {
  auto def = probe(700, 100, {0, 0}, 1.0, {0, 0});
  auto cap = probe(300, 80, {79, 81}, 1.2, {1.18, 1.22});
  EXPECT_FALSE(energy_change(cap, def).ci_pct);
  EXPECT_NEAR(energy_change(cap, def).pct, -20, 1e-9);
}

}  // namespace
}  // namespace regime::plan
