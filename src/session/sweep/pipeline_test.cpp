// The steps the session's commands share, on simulated GPUs: a probe of one GPU or of a job's
// GPUs, the probe's regime over the GPUs of a job (classify_probe), and the live search on a
// running loop (search_live) that `regime sweep`, `regime study` and a scheduler job's study run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "analysis/measure.hpp"
#include "cli/settings_options.hpp"
#include "common/error.hpp"
#include "session/probe/probe.hpp"
#include "session/study/study_steps.hpp"
#include "session/sweep/search_options.hpp"
#include "session/sweep/sweep.hpp"
#include "session/sweep/sweep_limits.hpp"
#include "session/sweep/sweep_search.hpp"
#include "session/sweep/sweep_setup.hpp"
#include "support/temp_dir.hpp"

namespace regime::session {
namespace {

namespace fs = std::filesystem;

WorkloadSpec builtin(const std::string& name) {
  WorkloadSpec w;
  w.builtin = name;
  return w;
}

// One simulated GPU running a built-in workload for `seconds` of its clock, measured.
Measurement measured(const std::string& device, const std::string& workload, double seconds) {
  Target t = open_target(parse_device_uri(device));
  WorkloadPtr w = t.make_workload(builtin(workload));
  RunOptions o;
  o.duration_s = seconds;
  return measure(run(t.gpu(), *w, o, t.clock()));
}

TEST(ProbePipeline, OneGpuIsProbedMeasuredAndKeptAsADoneRun) {
  const test::TempDir dir("regime-pipeline-probe");
  ProbeRequest r;
  r.device = cli::parse_device_set("sim:l4");
  r.workload.builtin = "sim:resnet50";
  r.seconds = 30;
  r.db = DatabaseLocation::from_text((dir / "runs.sqlite").string());
  r.trace_out = (dir / "probe.trace.csv").string();
  const ProbeReport p = run_probe(r);
  ASSERT_TRUE(p.report.has_value()) << p.failure;
  EXPECT_TRUE(p.simulated);
  EXPECT_EQ(p.exit_status, 0);
  EXPECT_EQ(p.record.status, "done");
  EXPECT_EQ(p.record.regime, to_string(p.report->regime));
  EXPECT_TRUE(fs::exists(dir / "probe.trace.csv"));
  EXPECT_EQ(RunStore(dir / "runs.sqlite").list().size(), 1u);
}

TEST(ProbePipeline, AJobOfSimulatedGpusIsRefusedBeforeAnythingRuns) {
  const test::TempDir dir("regime-pipeline-job-probe");
  ProbeRequest r;
  r.device = cli::parse_device_set("sim:l4,sim:t4");
  r.workload.builtin = "sim:resnet50";
  r.db = DatabaseLocation::from_text((dir / "runs.sqlite").string());
  EXPECT_THROW(run_job_probe(r), Error);
  EXPECT_FALSE(fs::exists(dir / "runs.sqlite"));
}

TEST(StudySteps, TheJobsRegimeIsItsMostConstrainedGpusAndItsEnergyTheSum) {
  // cnn5: the T4 is held by its cap, the GV100 has headroom (README's study table).
  const Measurement t4 = measured("sim:t4", "sim:cnn5", 60);
  const Measurement gv100 = measured("sim:gv100", "sim:cnn5", 60);
  const GpuInfo t4_info = open_target(parse_device_uri("sim:t4")).gpu().info();
  const GpuInfo gv100_info = open_target(parse_device_uri("sim:gv100")).gpu().info();
  const ProbeVerdict v = classify_probe({gv100, t4}, {gv100_info, t4_info});
  ASSERT_EQ(v.gpus.size(), 2u);
  EXPECT_EQ(v.gpus[0].regime, Regime::Headroom);
  EXPECT_EQ(v.gpus[1].regime, Regime::CapBound);
  EXPECT_EQ(v.regime.regime, Regime::CapBound);
  EXPECT_EQ(v.gpu, 1u);
  EXPECT_NEAR(v.job.energy_per_step_J, t4.energy_per_step_J + gv100.energy_per_step_J, 1e-6);
  // The plan comes from the GPU that names the regime: the T4's grid.
  const plan::SweepPlan p = plan_study_sweep(v, {gv100_info, t4_info});
  for (double cap : p.caps) EXPECT_LE(cap, t4_info.max_limit_W);

  // One GPU is a job of one: its own report.
  const ProbeVerdict one = classify_probe({gv100}, {gv100_info});
  EXPECT_EQ(one.gpu, 0u);
  EXPECT_EQ(one.regime.regime, Regime::Headroom);
  EXPECT_DOUBLE_EQ(one.job.energy_per_step_J, gv100.energy_per_step_J);
}

TEST(SweepSteps, SearchLiveSetsEveryCapThroughTheCallerAndNamesTheDefaultsRegime) {
  Target t = open_target(parse_device_uri("sim:gv100"));
  const GpuInfo info = t.gpu().info();
  SweepSettings s;  // adaptive: it classifies the default
  SweepReport rep = new_sweep_report({t.uri()}, {info}, "sim:cnn5");
  EXPECT_TRUE(rep.job_devices.empty());
  const std::vector<double> caps = {250, 200, 150, 125};
  plan::SearchOptions opt = sweep_search_options(rep, 1, twin::find_gpu_spec(info.name), caps, s);
  EXPECT_TRUE(opt.remeasure_default);
  EXPECT_DOUBLE_EQ(opt.decision.max_power_W, info.max_limit_W);
  std::vector<double> set_W;
  WorkloadPtr w = t.make_workload(builtin("sim:cnn5"));
  RunOptions until_done;
  until_done.duration_s = 0;
  RunLoop loop(t.gpu(), *w, until_done, t.clock());
  loop.start();
  search_live(
      rep, {info}, opt, loop, *w,
      [&](double cap_W) {
        set_W.push_back(cap_W);
        t.gpu().set_power_limit(cap_W);
      },
      s.budget);
  loop.finish();
  t.gpu().set_power_limit(info.default_limit_W);
  // The default first and again at the end, every cap set through the caller.
  ASSERT_GE(set_W.size(), 3u);
  EXPECT_EQ(set_W.front(), 250);
  EXPECT_EQ(set_W.back(), 250);
  EXPECT_EQ(rep.outcome.probes.size() + 1, set_W.size());
  for (double cap : set_W) EXPECT_NE(std::find(caps.begin(), caps.end(), cap), caps.end()) << cap;
  ASSERT_TRUE(rep.outcome.regime.has_value());
  EXPECT_EQ(*rep.outcome.regime, Regime::Headroom);
  EXPECT_EQ(rep.unit, "step");
}

TEST(SweepSteps, AJobsSearchCountsEveryGpuInItsPeakPower) {
  GpuInfo info;
  info.name = "NVIDIA H200";
  info.default_limit_W = 700;
  info.max_limit_W = 700;
  info.min_limit_W = 200;
  SweepReport rep = new_sweep_report({"nvml:0", "nvml:1"}, {info, info}, "train.py");
  EXPECT_EQ(rep.device, "nvml:0,nvml:1");
  EXPECT_EQ(rep.gpu_label(), "2x NVIDIA H200");
  const plan::SearchOptions opt =
      sweep_search_options(rep, 2, twin::find_gpu_spec(info.name), {700, 500}, SweepSettings{});
  EXPECT_DOUBLE_EQ(opt.decision.max_power_W, 1400);
  EXPECT_EQ(rep.strategy, plan::Strategy::Adaptive);
}

TEST(SweepSteps, SweepSiteRestoresTheLimit) {
  RunSite site = open_site(cli::parse_device_set("sim:gv100"), builtin("sim:cnn5"), "example");
  const double before_W = site.infos.front().enforced_limit_W;
  SweepSettings s;
  s.strategy = plan::Strategy::Exhaustive;
  const SweepReport rep = sweep_site(site, {250, 150}, s, ActuationPolicy::from_flags(false));
  EXPECT_EQ(rep.outcome.probes.size(), 2u);
  EXPECT_EQ(rep.after.rfind("restored the original limit 250 W", 0), 0u) << rep.after;
  EXPECT_DOUBLE_EQ(site.gpus.front()->info().enforced_limit_W, before_W);
}

// Checked before anything is opened: a job's GPUs share one clock, a simulated GPU has its own,
// a built-in workload runs only on a simulated GPU, a command only on a real one.
TEST(RunSite, RefusesWhatCannotRunBeforeOpeningAnything) {
  auto why = [](const std::string& devices, const WorkloadSpec& spec) {
    try {
      open_site(cli::parse_device_set(devices), spec, "EXAMPLE");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  WorkloadSpec command;
  command.command = {"true"};
  EXPECT_NE(
      why("sim:t4,sim:l4", builtin("sim:cnn5")).find("each simulated GPU is a machine of its own"),
      std::string::npos);
  EXPECT_NE(why("nvml:0", builtin("sim:cnn5")).find("runs only on a simulated device"),
            std::string::npos);
  EXPECT_NE(why("sim:t4", command).find("is simulated"), std::string::npos);
  EXPECT_NE(why("sim:t4", WorkloadSpec{}).find("EXAMPLE"), std::string::npos);
}

TEST(RunSite, OpensOneSimulatedGpuWithItsWorkload) {
  RunSite site = open_site(cli::parse_device_set("sim:t4"), builtin("sim:cnn5"), "example");
  EXPECT_FALSE(site.job());
  EXPECT_TRUE(site.simulated);
  EXPECT_FALSE(site.physical);
  EXPECT_EQ(site.devices, std::vector<std::string>{"sim:t4"});
  EXPECT_EQ(site.workload, "sim:cnn5");
  EXPECT_EQ(site.infos.front().name, site.gpus.front()->info().name);
  // A new workload per call: a restart sweep starts it once per cap.
  EXPECT_NE(site.start_workload().get(), nullptr);
}

}  // namespace
}  // namespace regime::session
