#include "analysis/whole_run.hpp"

#include <gtest/gtest.h>

#include "support/synthetic_trace.hpp"

namespace regime {
namespace {

// 20 s of 0.1 s steps: 400 W for the first 10 s (probe, then a cap tried), 300 W for the rest
// (the decision): 4,000 J + 3,000 J over 200 steps.
Trace capped_run() {
  synthetic::Spec spec;
  spec.seconds = 20;
  spec.step_s = 0.1;
  spec.power_W = 400;
  spec.second_half_power_W = 300;
  return synthetic::make(spec);
}

Measurement at_start_40J() {
  Measurement m;
  m.energy_per_step_J = 40;
  m.energy_per_step_ci_J = {39, 41};
  m.steps = 50;
  return m;
}

TEST(WholeRun, PartsAddUpToTheRunAndTheSavingCountsEveryStep) {
  const Trace t = capped_run();
  StudyTimes times;
  const double t0 = t.samples.front().t_s;
  times.probe_end_s = t0 + 5;
  times.sweep_ran = true;
  times.sweep_end_s = t0 + 10;
  times.cap_W = 300;
  const WholeRunFigures f = whole_run_figures({t}, times, at_start_40J());
  EXPECT_EQ(f.reached, StudyReach::Decision);
  EXPECT_EQ(f.run.steps, static_cast<int>(t.steps.size()));
  ASSERT_TRUE(f.profiling && f.decided);
  EXPECT_EQ(f.probe.steps + f.profiling->steps + f.decided->steps, f.run.steps);
  EXPECT_NEAR(f.run.energy_J, 7000, 20);
  EXPECT_NEAR(f.probe.energy_J + f.profiling->energy_J + f.decided->energy_J, f.run.energy_J, 1e-6);
  EXPECT_NEAR(f.decided->energy_J, 3000, 10);
  ASSERT_TRUE(f.decided->energy_per_step_J);
  EXPECT_NEAR(*f.decided->energy_per_step_J, 30, 0.5);
  ASSERT_TRUE(f.saved_J);
  EXPECT_NEAR(*f.saved_J, 40.0 * f.run.steps - f.run.energy_J, 1e-9);
  EXPECT_NEAR(*f.saved_J, 1000, 50);
  EXPECT_LT(f.saved_ci_J.first, *f.saved_J);
  EXPECT_GT(f.saved_ci_J.second, *f.saved_J);
  EXPECT_EQ(*f.cap_W, 300);
}

TEST(WholeRun, ARunThatEndedDuringTheProbeHasNoDecidedPartAndSavesNothing) {
  synthetic::Spec spec;
  spec.seconds = 8;
  spec.power_W = 400;
  const Trace t = synthetic::make(spec);
  StudyTimes times;
  times.probe_end_s = t.samples.back().t_s;
  const WholeRunFigures f = whole_run_figures({t}, times, at_start_40J());
  EXPECT_EQ(f.reached, StudyReach::Probe);
  EXPECT_FALSE(f.profiling);
  EXPECT_FALSE(f.decided);
  EXPECT_EQ(f.probe.steps, f.run.steps);
  ASSERT_TRUE(f.saved_J);
  EXPECT_NEAR(*f.saved_J, 0, 0.01 * f.run.energy_J);
  EXPECT_LE(f.saved_ci_J.first, 0);
  EXPECT_GE(f.saved_ci_J.second, 0);
}

TEST(WholeRun, AJobSumsItsGpusEnergyAndCountsItsStepsOnce) {
  const Trace a = capped_run();
  const Trace b = capped_run();
  StudyTimes times;
  times.probe_end_s = a.samples.back().t_s;
  const WholeRunFigures one = whole_run_figures({a}, times, std::nullopt);
  const WholeRunFigures two = whole_run_figures({a, b}, times, std::nullopt);
  EXPECT_EQ(two.run.steps, one.run.steps);
  EXPECT_NEAR(two.run.energy_J, 2 * one.run.energy_J, 1e-6);
  EXPECT_FALSE(two.saved_J);  // no figure at the starting limit to compare with
  EXPECT_TRUE(to_json(two).at("saved_J").is_null());
}

TEST(WholeRun, NoFiniteStartingFigureMeansNoSaving) {
  Measurement m = at_start_40J();
  m.energy_per_step_J = std::numeric_limits<double>::quiet_NaN();
  StudyTimes times;
  times.probe_end_s = 5;
  EXPECT_FALSE(whole_run_figures({capped_run()}, times, m).saved_J);
  m = at_start_40J();
  m.per_second = true;
  EXPECT_FALSE(whole_run_figures({capped_run()}, times, m).saved_J);
}

}  // namespace
}  // namespace regime
