#include "analysis/whole_run.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

// The probe to 5 s, caps tried to 10 s, 300 W decided for the rest.
StudyTimes decided_at_10s(const Trace& t) {
  StudyTimes times;
  const double t0 = t.samples.front().t_s;
  times.probe_end_s = t0 + 5;
  times.sweep_ran = true;
  times.sweep_end_s = t0 + 10;
  times.cap_W = 300;
  return times;
}

TEST(WholeRun, PartsAddUpToTheRunAndTheSavingCountsEveryStep) {
  const Trace t = capped_run();
  const StudyTimes times = decided_at_10s(t);
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

// A reference window at 38 J per step over a run that drew 40 J a step at the same limit (its
// start-up and the probe's own steps cost more than the steady window says).
Measurement at_default_38J() {
  Measurement m = at_start_40J();
  m.energy_per_step_J = 38;
  m.energy_per_step_ci_J = {37.5, 38.5};
  return m;
}

// A read-only study, or one with nothing to sweep: every part ran at the default, so nothing was
// saved or lost, whatever the steady window's figure (before, the 2 J a step between the run and
// its steady window was claimed as a 400 J loss).
TEST(WholeRun, ARunThatNeverLeftTheReferenceLimitSavesExactlyNothing) {
  synthetic::Spec spec;
  spec.seconds = 20;
  const Trace t = synthetic::make(spec);
  StudyTimes times;
  times.probe_end_s = t.samples.front().t_s + 5;
  times.sweep_end_s = times.probe_end_s;  // nothing tried: the rest at the starting limit
  times.start_W = 700;
  const WholeRunFigures f =
      whole_run_figures({t}, times, saving_basis(at_default_38J(), 700, std::nullopt, 700));
  ASSERT_TRUE(f.saved_J && f.decided);
  EXPECT_TRUE(f.ran_at_reference);
  EXPECT_EQ(*f.saved_J, 0);
  EXPECT_EQ(f.saved_ci_J.first, 0);
  EXPECT_EQ(f.saved_ci_J.second, 0);
  EXPECT_EQ(to_json(f).at("ran_at_reference"), true);
  // Kept at the starting limit after a sweep: the caps tried are what is counted.
  times.sweep_ran = true;
  times.sweep_end_s = times.probe_end_s + 5;
  const WholeRunFigures g =
      whole_run_figures({t}, times, saving_basis(at_default_38J(), 700, std::nullopt, 700));
  ASSERT_TRUE(g.saved_J && g.profiling);
  EXPECT_FALSE(g.ran_at_reference);
  EXPECT_NEAR(*g.saved_J, 38.0 * g.profiling->steps - g.profiling->energy_J, 1e-9);
}

// The probe ran at the reference limit: only the caps tried and the decided part are compared
// with the reference's energy per step.
TEST(WholeRun, OnlyThePartsAwayFromTheReferenceLimitCountTowardTheSaving) {
  const Trace t = capped_run();
  StudyTimes times = decided_at_10s(t);
  times.start_W = 700;
  const WholeRunFigures f =
      whole_run_figures({t}, times, saving_basis(at_default_38J(), 700, std::nullopt, 700));
  ASSERT_TRUE(f.saved_J && f.profiling && f.decided);
  EXPECT_FALSE(f.ran_at_reference);
  const double away_steps = f.profiling->steps + f.decided->steps;
  const double away_J = f.profiling->energy_J + f.decided->energy_J;
  EXPECT_NEAR(*f.saved_J, 38.0 * away_steps - away_J, 1e-9);
  EXPECT_NEAR(*f.saved_J, 700, 40);  // 38 x 150 - 5,000 J; every step counted it would be 600
  // The reference's interval stands for those steps only.
  EXPECT_NEAR(*f.saved_J - f.saved_ci_J.first, 0.5 * away_steps, 1e-6);
}

// The run started at 500 W, under the default: the probe there counts at its steady 38 J a step
// against the default's 44 J, not at the 40 J with its start-up that its trace holds.
TEST(WholeRun, AProbeAwayFromTheReferenceCountsAtItsSteadyFigure) {
  Measurement at_default = at_start_40J();
  at_default.energy_per_step_J = 44;
  at_default.energy_per_step_ci_J = {43, 45};
  Measurement steady_start = at_start_40J();
  steady_start.energy_per_step_J = 38;
  steady_start.energy_per_step_ci_J = {37.5, 38.5};
  const Trace t = capped_run();
  StudyTimes times = decided_at_10s(t);
  times.start_W = 500;
  const WholeRunFigures f =
      whole_run_figures({t}, times, saving_basis(steady_start, 500, at_default, 700));
  ASSERT_TRUE(f.saved_J);
  EXPECT_EQ(f.saved_against, "default 700 W");
  EXPECT_NEAR(*f.saved_J,
              44.0 * f.run.steps - (f.run.energy_J - f.probe.energy_J + 38.0 * f.probe.steps),
              1e-6);
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

TEST(WholeRun, TheSavingIsAgainstTheDefaultWhereAWindowThereWasMeasured) {
  Measurement at_default = at_start_40J();
  at_default.energy_per_step_J = 44;
  at_default.energy_per_step_ci_J = {43, 45};
  // The probe ran at the default: its own window is the reference.
  SavingBasis b = saving_basis(at_start_40J(), 700, at_default, 700);
  EXPECT_EQ(b.against, "default 700 W");
  EXPECT_EQ(b.reference->energy_per_step_J, 40);
  // The probe ran at 500 W: the sweep's window at the default is the reference.
  b = saving_basis(at_start_40J(), 500, at_default, 700);
  EXPECT_EQ(b.against, "default 700 W");
  EXPECT_EQ(b.reference->energy_per_step_J, 44);
  // No window at the default: the starting limit, and the figures say so.
  b = saving_basis(at_start_40J(), 500, std::nullopt, 700);
  EXPECT_EQ(b.against, "starting limit 500 W");
  EXPECT_EQ(b.reference->energy_per_step_J, 40);
  const Trace t = capped_run();
  const WholeRunFigures f = whole_run_figures({t}, decided_at_10s(t), b);
  EXPECT_EQ(f.saved_against, "starting limit 500 W");
  EXPECT_EQ(to_json(f).at("saved_against"), "starting limit 500 W");
  const WholeRunFigures g =
      whole_run_figures({t}, decided_at_10s(t), saving_basis(at_start_40J(), 500, at_default, 700));
  ASSERT_TRUE(g.saved_J);
  EXPECT_NEAR(*g.saved_J, 44.0 * g.run.steps - g.run.energy_J, 1e-9);
  EXPECT_EQ(to_json(g).at("saved_against"), "default 700 W");
}

TEST(WholeRun, TheDecisionWindowsIntervalWidensTheSavingsInQuadrature) {
  const Trace t = capped_run();
  const StudyTimes times = decided_at_10s(t);
  SavingBasis b{at_start_40J(), "default 700 W", std::nullopt, std::nullopt, std::nullopt};
  const WholeRunFigures alone = whole_run_figures({t}, times, b);
  Measurement at_decision = at_start_40J();
  at_decision.energy_per_step_J = 30;
  at_decision.energy_per_step_ci_J = {29.5, 31};
  b.decision = at_decision;
  const WholeRunFigures both = whole_run_figures({t}, times, b);
  ASSERT_TRUE(alone.saved_J && both.saved_J && both.decided);
  EXPECT_EQ(*both.saved_J, *alone.saved_J);  // the point figure is the measured run's
  const double n = both.run.steps;
  const double m = both.decided->steps;
  EXPECT_NEAR(*both.saved_J - both.saved_ci_J.first, std::hypot(1.0 * n, 1.0 * m), 1e-6);
  EXPECT_NEAR(both.saved_ci_J.second - *both.saved_J, std::hypot(1.0 * n, 0.5 * m), 1e-6);
  EXPECT_LT(both.saved_ci_J.first, alone.saved_ci_J.first);
  EXPECT_GT(both.saved_ci_J.second, alone.saved_ci_J.second);
}

TEST(WholeRun, TheProfilingCostIsItsExtraEnergyAndTimeAgainstTheReference) {
  const Trace t = capped_run();
  Measurement ref = at_start_40J();
  ref.time_per_step_s = 0.08;  // the reference ran its steps faster than the 0.1 s tried
  const WholeRunFigures f = whole_run_figures(
      {t}, decided_at_10s(t),
      SavingBasis{ref, "default 700 W", std::nullopt, std::nullopt, std::nullopt});
  ASSERT_TRUE(f.profiling && f.profiling_extra_J && f.profiling_extra_s);
  EXPECT_NEAR(*f.profiling_extra_J, f.profiling->energy_J - 40.0 * f.profiling->steps, 1e-9);
  EXPECT_NEAR(*f.profiling_extra_s, f.profiling->seconds - 0.08 * f.profiling->steps, 1e-9);
  EXPECT_GT(*f.profiling_extra_s, 0);
  const nlohmann::json j = to_json(f);
  EXPECT_EQ(j.at("profiling_extra_s").get<double>(), *f.profiling_extra_s);
  EXPECT_EQ(j.at("profiling_extra_J").get<double>(), *f.profiling_extra_J);
  // Without a sweep there is no profiling cost.
  StudyTimes probe_only;
  probe_only.probe_end_s = t.samples.back().t_s;
  EXPECT_TRUE(
      to_json(whole_run_figures({t}, probe_only, SavingBasis{ref, "default 700 W", {}, {}, {}}))
          .at("profiling_extra_J")
          .is_null());
}

}  // namespace
}  // namespace regime
