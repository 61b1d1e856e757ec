// ControlLoop on the simulator: a controller's actions reach the GPU only through the guard,
// inside [min, default] and the rate limit, even when the controller asks for nonsense.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "control/controller.hpp"
#include "control/thermal.hpp"
#include "session/site/target.hpp"
#include "support/test_gpu.hpp"

namespace regime::control {
namespace {

// Asks for absurd limits, alternately far above and far below the range, every period.
class RogueController : public Controller {
 public:
  std::string name() const override { return "rogue"; }
  double period_s() const override { return 1; }
  Action decide(const ControlInput&) override {
    flip_ = !flip_;
    return {flip_ ? 1e6 : -5.0, "rogue"};
  }

 private:
  bool flip_ = false;
};

struct SimRun {
  std::vector<ControlAction> actions;
  std::vector<Sample> samples;
  double limit_after_W = 0;
};

SimRun run_on_sim(const std::string& uri, Controller& c, const LimitBounds& b, double seconds,
                  bool dry_run = false) {
  session::Target target = session::open_target(parse_device_uri(uri));
  session::WorkloadSpec spec;
  spec.builtin = "sim:resnet50";
  WorkloadPtr w = target.make_workload(spec);
  SimRun out;
  {
    PowerLimitGuard guard(target.gpu(), ActuationPolicy{});
    RunOptions ro;
    ro.duration_s = seconds;
    ro.sample_period_s = 0.1;
    RunLoop loop(target.gpu(), *w, ro, target.clock());
    loop.start();
    ControlLoop cl(loop, guard, c, b, target.gpu().info().current_limit_W, dry_run);
    EXPECT_EQ(cl.run(), RunEnd::Duration);
    out.actions = cl.actions();
    out.samples = loop.finish().samples;
  }  // the guard restores here
  out.limit_after_W = target.gpu().info().current_limit_W;
  return out;
}

TEST(ControlLoop, ARogueControllerIsHeldToTheBoundsAndTheRateLimit) {
  RogueController rogue;
  LimitBounds b{300, 700, 50, 4};
  SimRun r = run_on_sim("sim:h200", rogue, b, 120);
  ASSERT_GT(r.actions.size(), 5u);
  for (size_t i = 0; i < r.actions.size(); ++i) {
    const ControlAction& a = r.actions[i];
    EXPECT_GE(a.new_limit_W, b.min_W);
    EXPECT_LE(a.new_limit_W, b.max_W);
    EXPECT_LE(std::abs(a.new_limit_W - a.old_limit_W), b.max_step_W + 1e-9);
    if (i > 0) {
      EXPECT_GE(a.t_s - r.actions[i - 1].t_s, b.min_interval_s - 1e-9);
    }
  }
  for (const Sample& s : r.samples) {
    if (s.limit_W) {
      EXPECT_GE(*s.limit_W, b.min_W - 1e-9);
    }
  }
  EXPECT_DOUBLE_EQ(r.limit_after_W, 700);
}

TEST(ControlLoop, ThermalKeepsAPoorlyCooledH200UnderItsTarget) {
  session::Target probe = session::open_target(parse_device_uri("sim:h200,ambient_C=30,cooling=2"));
  ThermalParams p = thermal_defaults(probe.gpu().info(), 20.0);
  ThermalController c(p);
  SimRun r = run_on_sim("sim:h200,ambient_C=30,cooling=2", c, {p.min_W, p.max_W, p.step_W, 5}, 600);
  ASSERT_FALSE(r.actions.empty());
  EXPECT_LT(r.actions.back().new_limit_W, p.max_W);
  // Once settled (the last 300 s) the die stays at or under the target and the limit is still.
  double max_late_C = 0;
  for (const Sample& s : r.samples) {
    if (s.t_s > 300 && s.temp_C) max_late_C = std::max(max_late_C, *s.temp_C);
  }
  EXPECT_LE(max_late_C, p.target_C + 0.5);
  EXPECT_LT(r.actions.back().t_s, 300);
  EXPECT_DOUBLE_EQ(r.limit_after_W, 700);
}

TEST(ControlLoop, ADryRunDecidesAndRecordsButSetsNothing) {
  session::Target probe = session::open_target(parse_device_uri("sim:h200,ambient_C=30,cooling=2"));
  ThermalParams p = thermal_defaults(probe.gpu().info(), 20.0);
  ThermalController c(p);
  SimRun r =
      run_on_sim("sim:h200,ambient_C=30,cooling=2", c, {p.min_W, p.max_W, p.step_W, 5}, 300, true);
  ASSERT_GE(r.actions.size(), 3u);  // the card stays hot, so it would go on lowering
  for (size_t i = 0; i < r.actions.size(); ++i) {
    const ControlAction& a = r.actions[i];
    EXPECT_FALSE(a.applied);
    ASSERT_TRUE(a.temp_C && a.power_W);
    EXPECT_GT(*a.temp_C, p.target_C);  // each decision carries the reading that caused it
    EXPECT_DOUBLE_EQ(a.new_limit_W, a.old_limit_W - p.step_W);
    if (i > 0) {
      EXPECT_DOUBLE_EQ(a.old_limit_W, r.actions[i - 1].new_limit_W);
    }
  }
  for (const Sample& s : r.samples) {
    if (s.limit_W) {
      EXPECT_DOUBLE_EQ(*s.limit_W, 700);
    }
  }
}

// sim:resnet50 started on a simulated GPU, under a guard, sampled every 100 ms for `seconds`.
session::WorkloadSpec resnet50() {
  session::WorkloadSpec spec;
  spec.builtin = "sim:resnet50";
  return spec;
}
RunOptions run_options(double seconds) {
  RunOptions ro;
  ro.duration_s = seconds;
  ro.sample_period_s = 0.1;
  return ro;
}
struct SimRig {
  SimRig(const std::string& uri, double seconds)
      : target(session::open_target(parse_device_uri(uri))),
        work(target.make_workload(resnet50())),
        guard(target.gpu(), ActuationPolicy{}),
        loop(target.gpu(), *work, run_options(seconds), target.clock()) {
    loop.start();
  }
  session::Target target;
  WorkloadPtr work;
  PowerLimitGuard guard;
  RunLoop loop;
};

// An evaluation's arm switches: the original for a baseline window, the controller's own limit
// back after it, and no decision until a dwell after the resume.
TEST(ControlLoop, StepAsideAndResumeSwitchArmsThroughTheGuard) {
  SimRig rig("sim:h200,ambient_C=30,cooling=2", 600);
  session::Target& target = rig.target;
  RunLoop& loop = rig.loop;
  ThermalParams p = thermal_defaults(target.gpu().info(), 20.0);
  ThermalController c(p);
  ControlLoop cl(loop, rig.guard, c, {p.min_W, p.max_W, p.step_W, 5}, 700);
  EXPECT_EQ(cl.run_until(150), RunEnd::StopRequested);
  EXPECT_NEAR(loop.now_s(), 150, 0.2);
  const double controlled_W = cl.limit_W();
  ASSERT_LT(controlled_W, 700);
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, controlled_W);
  cl.step_aside();
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, 700);
  loop.run_until([](const Trace&, double now) { return now >= 300; });
  const size_t before = cl.actions().size();
  cl.resume();
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, controlled_W);
  cl.run_until(300 + p.dwell_s - 1);
  EXPECT_EQ(cl.actions().size(), before);  // the hot pause is not acted on within the dwell
  cl.run_until(600);
  loop.finish();
  rig.guard.restore();
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, 700);
}

// Wants 300 W and names 450 W as the best single cap; keeps what it was shown.
class BaselineController : public Controller {
 public:
  std::string name() const override { return "baseline"; }
  double period_s() const override { return 1; }
  Action decide(const ControlInput& in) override {
    seen.push_back(in);
    return {300.0, "wants 300 W"};
  }
  std::optional<double> baseline_limit_W() const override { return 450; }
  std::vector<ControlInput> seen;
};

// A controller that names a baseline (phase: the best single cap) has its baseline windows at
// that limit, not at the one control started from; each decision sees the period's utilisation
// and the steps that ended in it.
TEST(ControlLoop, StepAsideHoldsTheControllersBaselineAndDecisionsSeeStepsAndUtilisation) {
  SimRig rig("sim:h200", 60);
  session::Target& target = rig.target;
  RunLoop& loop = rig.loop;
  BaselineController c;
  ControlLoop cl(loop, rig.guard, c, {200, 700, 0, 0}, 700);
  cl.run_until(10);
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, 300);
  cl.step_aside();
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, 450);
  cl.resume();
  EXPECT_DOUBLE_EQ(target.gpu().info().current_limit_W, 300);
  ASSERT_GE(c.seen.size(), 5u);
  const ControlInput& in = c.seen.back();
  ASSERT_TRUE(in.util_pct);
  EXPECT_GT(*in.util_pct, 50);
  EXPECT_NEAR(in.now_s - in.since_s, 1, 1e-6);
  int steps = 0;
  for (const Step& st : loop.trace().steps)
    steps += st.t_end_s > in.since_s && st.t_end_s <= in.now_s;
  EXPECT_GT(in.steps, 0);
  EXPECT_EQ(in.steps, steps);
  loop.finish();
  rig.guard.restore();
}

// Lowers its limit by 10 W at every decision; counts them.
class SteppingController : public Controller {
 public:
  explicit SteppingController(double period_s) : period_s_(period_s) {}
  std::string name() const override { return "stepping"; }
  double period_s() const override { return period_s_; }
  Action decide(const ControlInput& in) override {
    ++decisions;
    return {in.limit_W - 10, "step down"};
  }
  int decisions = 0;

 private:
  double period_s_;
};

TEST(ControlLoop, EachGpuOfAJobHasItsOwnControllerGuardAndPeriod) {
  testing::FakeClock clock;
  testing::TestGpu gpu0(clock, 400), gpu1(clock, 400);
  testing::TestWorkload work(clock, 0.5, 0);
  PowerLimitGuard guard0(gpu0, ActuationPolicy{}), guard1(gpu1, ActuationPolicy{});
  SteppingController fast(2), slow(5);
  RunOptions ro;
  ro.duration_s = 100;
  ro.sample_period_s = 0.1;
  RunLoop loop({&gpu0, &gpu1}, work, ro, clock);
  loop.start();
  const LimitBounds b{300, 700, 50, 0};
  ControlLoop cl(loop, {{0, &guard0, &fast, b, 700}, {1, &guard1, &slow, b, 700}});
  ASSERT_EQ(cl.lane_count(), 2u);
  EXPECT_EQ(cl.run_until(loop.now_s() + 21), RunEnd::StopRequested);
  EXPECT_EQ(fast.decisions, 10);
  EXPECT_EQ(slow.decisions, 4);
  EXPECT_DOUBLE_EQ(gpu0.limit_W, 600);  // ten steps of 10 W down from 700 W
  EXPECT_DOUBLE_EQ(gpu1.limit_W, 660);
  EXPECT_EQ(cl.actions(0).size(), 10u);
  EXPECT_EQ(cl.actions(1).size(), 4u);
  cl.step_aside();  // both back to where they started
  EXPECT_DOUBLE_EQ(gpu0.limit_W, 700);
  EXPECT_DOUBLE_EQ(gpu1.limit_W, 700);
  cl.resume();
  EXPECT_DOUBLE_EQ(gpu0.limit_W, 600);
  EXPECT_DOUBLE_EQ(gpu1.limit_W, 660);
  loop.finish_all();
  guard0.restore();
  guard1.restore();
  EXPECT_DOUBLE_EQ(gpu0.limit_W, 700);
  EXPECT_DOUBLE_EQ(gpu1.limit_W, 700);
}

TEST(ControlLoop, ALaneForAGpuTheLoopDoesNotSampleIsRefused) {
  testing::FakeClock clock;
  testing::TestGpu gpu0(clock, 400);
  testing::TestWorkload work(clock, 0.5, 0);
  PowerLimitGuard guard(gpu0, ActuationPolicy{});
  SteppingController c(1);
  RunLoop loop(gpu0, work, RunOptions{}, clock);
  EXPECT_THROW(ControlLoop(loop, {{1, &guard, &c, {300, 700, 50, 0}, 700}}), Error);
  EXPECT_THROW(ControlLoop(loop, std::vector<ControlLane>{}), Error);
}

}  // namespace
}  // namespace regime::control
