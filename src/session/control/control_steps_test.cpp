// The steps of `regime control` one by one (session/control/control_steps.hpp): the request
// checked, each GPU's lane, the run length an evaluation needs, the gate's decision, the segments
// of a long run, the job's windows and verdict, and a short controlled run recorded on a simulated
// H200.
#include "session/control/control_steps.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "cli/settings_options.hpp"
#include "common/error.hpp"
#include "support/error_of.hpp"

namespace regime::session {
namespace {

// A hot H200 (30 C air, poor cooling): thermal-bound under ResNet-50, as docs/control.md shows.
const char* const kHotH200 = "sim:h200,ambient_C=30,cooling=2";

ControlRequest request(const std::string& device, const std::string& policy, double seconds) {
  ControlRequest r;
  r.device = cli::parse_device_set(device);
  r.workload.builtin = "sim:resnet50";
  r.policy = control::parse_policy(policy);
  r.seconds = seconds;
  return r;
}

using test::error_of;
using test::kind_of;

TEST(ControlSteps, TheRequestIsCheckedAndItsPolicyParsed) {
  EXPECT_EQ(checked_control_policy(request(kHotH200, "regime-gated:probe_s=30", 100)).name,
            "regime-gated");
  EXPECT_EQ(checked_control_policy(request(kHotH200, "thermal:target_C=80", 100)).name, "thermal");
  ControlRequest even = request(kHotH200, "thermal", 1500);
  even.evaluate = true;
  even.windows = 4;
  EXPECT_EQ(kind_of([&] { checked_control_policy(even); }), ErrorKind::InvalidArgument);
  even.evaluate = false;  // --windows counts only under --evaluate
  EXPECT_NO_THROW(checked_control_policy(even));
  const std::string unknown =
      error_of([&] { checked_control_policy(request(kHotH200, "bogus", 100)); });
  EXPECT_NE(unknown.find("--policy 'bogus': unknown policy"), std::string::npos) << unknown;
  ControlRequest no_work = request(kHotH200, "thermal", 100);
  no_work.workload.builtin.clear();
  EXPECT_EQ(kind_of([&] { checked_control_policy(no_work); }), ErrorKind::InvalidArgument);
}

TEST(ControlSteps, ASimulatedGpuGetsALaneWithTheGatedInnerControllerAndTheDefaultProbe) {
  const ControlRequest r = request(kHotH200, "regime-gated", 300);
  std::vector<Target> targets = open_targets(r.device);
  const std::vector<Gpu*> gpus = control_gpus(targets);
  ASSERT_EQ(gpus.size(), 1u);
  const std::vector<ControlGpu> lanes =
      control_lanes(r, r.policy, targets, gpus, ActuationPolicy{});
  ASSERT_EQ(lanes.size(), 1u);
  const ControlReport& g = lanes.front().rep;
  EXPECT_EQ(g.device, kHotH200);
  EXPECT_EQ(g.workload, "sim:resnet50");
  EXPECT_EQ(g.controller, "thermal");
  EXPECT_EQ(g.probe_s, 60);
  EXPECT_TRUE(g.simulated);
  EXPECT_FALSE(g.dry_run);  // a simulated GPU may be changed without --actuate
  EXPECT_EQ(g.limit_before_W, g.info.current_limit_W);
  EXPECT_TRUE(g.controller_params.is_object());
  ASSERT_TRUE(lanes.front().tau_s.has_value());  // data/gpus knows the H200
  EXPECT_NE(lanes.front().controller.controller, nullptr);
  // Settling: three of the card's time constants.
  EXPECT_DOUBLE_EQ(slowest_settle_s(lanes), 3 * *lanes.front().tau_s);

  ControlRequest dry = r;
  dry.dry_run = true;
  const std::vector<ControlGpu> dry_lanes =
      control_lanes(dry, dry.policy, targets, gpus, ActuationPolicy{});
  EXPECT_TRUE(dry_lanes.front().rep.dry_run);
  EXPECT_EQ(dry_lanes.front().rep.dry_run_why, "--dry-run");
}

TEST(ControlSteps, TheSlowestDieSetsTheSettlingTimeAndTheDwellStandsInForAnUnknownCard) {
  std::vector<ControlGpu> lanes(3);
  lanes[0].tau_s = 10;
  lanes[1].tau_s = 25;
  lanes[2].controller.dwell_s = 20;  // no time constant known
  EXPECT_DOUBLE_EQ(slowest_settle_s(lanes), 75);
  lanes[2].controller.dwell_s = 40;
  EXPECT_DOUBLE_EQ(slowest_settle_s(lanes), 120);
}

TEST(ControlSteps, AnEvaluationTooShortForItsWindowsSaysHowLongItNeeds) {
  // The probe, then a lead-in and 7 windows, each settling 60 s and measured as long again.
  EXPECT_DOUBLE_EQ(evaluation_seconds(60, 7, 60), 60 + 8 * 120);
  ControlRequest r = request(kHotH200, "regime-gated", 1000);
  r.evaluate = true;
  const std::string msg = error_of([&] { check_control_length(r, true, 60, 60); });
  EXPECT_NE(msg.find("give --seconds 1020 or more"), std::string::npos) << msg;
  r.seconds = 1020;
  EXPECT_NO_THROW(check_control_length(r, true, 60, 60));
  // thermal has no probe: the same windows fit in 60 s less.
  r.seconds = 960;
  EXPECT_NO_THROW(check_control_length(r, false, 60, 60));
  // regime-gated's probe must leave time to control.
  r.evaluate = false;
  EXPECT_EQ(kind_of([&] { check_control_length(r, true, 5, 60); }), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind_of([&] { check_control_length(r, true, 960, 60); }), ErrorKind::InvalidArgument);
}

TEST(ControlSteps, ADryEvaluationOfThermalIsRefusedBeforeAnyWorkRuns) {
  ControlRequest r = request(kHotH200, "thermal", 1500);
  r.evaluate = true;
  r.dry_run = true;
  const std::string msg = error_of([&] { open_control(r); });
  EXPECT_EQ(msg.rfind("--evaluate compares windows with and without the controller", 0), 0u) << msg;
  EXPECT_EQ(kind_of([&] { open_control(r); }), ErrorKind::InvalidArgument);
  r.dry_run = false;
  const ControlSetup s = open_control(r);
  EXPECT_FALSE(s.gated);
  EXPECT_FALSE(s.job());
  EXPECT_GT(s.settle_s, 0);
}

TEST(ControlSteps, TheGateEngagesOnAThermalBoundGpuAndNamesTheRegimeOtherwise) {
  ControlReport g;
  g.controller = "thermal";
  g.info.min_limit_W = 200;
  RegimeReport probe;
  probe.regime = Regime::ThermalBound;
  probe.confidence = 0.87;
  probe.measurement.avg_power_W = 540;
  gate_lane(g, probe);
  EXPECT_TRUE(g.engaged);
  ASSERT_TRUE(g.probe.has_value());
  EXPECT_EQ(g.reason,
            "thermal-bound (confidence 0.87): heat limits the clocks; engaging thermal control");
  probe.regime = Regime::CapBound;
  gate_lane(g, probe);
  EXPECT_FALSE(g.engaged);
  EXPECT_EQ(g.reason, gate_reason(probe, g.info));
  EXPECT_EQ(g.probe->regime, Regime::CapBound);
}

TEST(ControlSteps, OnlyALongPlainRunIsMeasuredInSegments) {
  ControlRequest r = request(kHotH200, "thermal", 3600);
  r.warmup_s = 100;
  const SegmentPlan p = segment_plan(r, 5);
  EXPECT_TRUE(p.on);
  EXPECT_DOUBLE_EQ(p.first_s, 280);  // the first segment holds the warm-up
  EXPECT_DOUBLE_EQ(p.from_s, 5);
  EXPECT_DOUBLE_EQ(p.end_s, 3605);
  EXPECT_FALSE(p.first.detect_steady_state);
  EXPECT_FALSE(p.later.detect_steady_state);
  r.evaluate = true;
  EXPECT_FALSE(segment_plan(r, 0).on);  // an evaluation measures its windows instead
  r.evaluate = false;
  r.warmup_s.reset();
  r.seconds = 240;  // the first segment and half of another: one measurement
  EXPECT_FALSE(segment_plan(r, 0).on);
  r.seconds = 241;
  EXPECT_TRUE(segment_plan(r, 0).on);
}

EvaluationWindow window(bool controlled, double t0_s, double energy_per_step_J, int steps) {
  EvaluationWindow w;
  w.controlled = controlled;
  w.t0_s = t0_s;
  w.t1_s = t0_s + 100;
  w.measurement.steps = steps;
  w.measurement.energy_J = energy_per_step_J * steps;
  w.measurement.energy_per_step_J = energy_per_step_J;
  w.measurement.time_per_step_s = 100.0 / steps;
  w.measurement.window_start_s = t0_s;
  w.measurement.window_end_s = t0_s + 100;
  return w;
}

TEST(ControlSteps, TheJobsWindowsSumItsGpusEnergyOverTheSameStretch) {
  const std::vector<std::vector<EvaluationWindow>> per_gpu = {
      {window(false, 0, 30, 100), window(true, 200, 27, 100)},
      {window(false, 0, 20, 100), window(true, 200, 20, 100)}};
  const std::vector<EvaluationWindow> job = job_windows(per_gpu);
  ASSERT_EQ(job.size(), 2u);
  EXPECT_FALSE(job[0].controlled);
  EXPECT_TRUE(job[1].controlled);
  EXPECT_DOUBLE_EQ(job[1].t0_s, 200);
  EXPECT_NEAR(job[0].measurement.energy_per_step_J, 50, 1e-9);
  EXPECT_NEAR(job[1].measurement.energy_per_step_J, 47, 1e-9);
  EXPECT_TRUE(job_windows({}).empty());
}

TEST(ControlSteps, WindowsWithTenPercentLessEnergyAtTheSameSpeedAreJudgedToHelp) {
  Evaluation ev;
  for (int i = 0; i < 7; ++i) {
    const bool controlled = i % 2 == 1;
    // A little noise, so that the intervals have a width.
    const double noise_J = (i % 3 == 0 ? 0.1 : -0.1);
    ev.windows.push_back(window(controlled, 100.0 * i, (controlled ? 27 : 30) + noise_J, 100));
  }
  judge_windows(ev);
  EXPECT_EQ(ev.baseline.windows, 4);
  EXPECT_EQ(ev.controlled.windows, 3);
  EXPECT_EQ(ev.baseline.steps, 400);
  EXPECT_NEAR(ev.energy_change_pct, -10, 1);
  EXPECT_LT(ev.energy_change_ci_pct.second, 0);
  EXPECT_NEAR(ev.time_change_pct, 0, 1e-6);
  EXPECT_EQ(ev.verdict, Verdict::Helps);
}

TEST(ControlSteps, OneGpusReportIsTheRunsWithWhatTheCommandWasSeenToUse) {
  ControlReport lane;
  lane.device = "nvml:0";
  lane.engaged = true;
  ControlReport run;
  run.usage = {{"cuda_visible_devices", "0"}};
  run.warnings = {"a warning"};
  const ControlReport out = one_gpu_report(lane, run);
  EXPECT_EQ(out.device, "nvml:0");
  EXPECT_TRUE(out.engaged);
  EXPECT_EQ(out.usage, run.usage);
  EXPECT_EQ(out.warnings, run.warnings);
}

// The whole pipeline but the guards' restore and the store, on a hot simulated H200 for 120 s of
// its clock: thermal acts from the start and lowers the limit, and the run is measured.
TEST(ControlSteps, AHotSimulatedH200IsRecordedUnderThermalControlAndMeasured) {
  const ControlRequest r = request(kHotH200, "thermal", 120);
  ControlSetup s = open_control(r);
  ControlReport rep = s.lanes.front().rep;
  WorkloadPtr work = s.targets.front().make_workload(r.workload);
  JobProcessWatch watch({rep.info}, r.workload);
  PowerLimitGuardSet guards(s.gpus, s.policy);
  const RecordedControlRun run = record_control_run(r, s, *work, rep, guards, watch);
  guards.restore();
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_FALSE(run.plan.on);
  EXPECT_NEAR(run.stats.t_end_s - run.stats.t_start_s, 120, 1);
  const ControlReport& g = s.lanes.front().rep;
  EXPECT_TRUE(g.engaged);
  EXPECT_EQ(g.reason, "thermal: controlling from the start");
  ASSERT_FALSE(g.actions.empty());
  EXPECT_LT(g.actions.front().new_limit_W, g.limit_before_W);
  const LaneFigures f = measure_lanes(r, s, run, false);
  ASSERT_EQ(f.per_gpu.size(), 1u);
  EXPECT_GT(f.per_gpu.front().energy_per_step_J, 0);
  EXPECT_TRUE(f.windows.empty());
  EXPECT_EQ(s.lanes.front().rep.limit_after_W, g.limit_before_W);  // restored
}

}  // namespace
}  // namespace regime::session
