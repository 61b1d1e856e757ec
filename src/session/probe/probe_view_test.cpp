// The probe reports' two presenters: the text and the JSON of one report show the same figures.
#include "session/probe/probe_view.hpp"

#include <gtest/gtest.h>

#include "session/probe/probe.hpp"

namespace regime::session {
namespace {

ProbeReport headroom_probe(const std::string& device, int64_t run_id) {
  ProbeReport p;
  p.record.id = run_id;
  p.record.device = device;
  p.record.gpu_name = "NVIDIA L4";
  p.record.workload = "sim:resnet50";
  p.record.trace_path = "run.trace.csv";
  p.record.steps_path = "run.steps.csv";
  p.run = {{"duration_s", 60.0}, {"samples", 6000},   {"step_markers", 140},
           {"read_retries", 0},  {"failed_reads", 0}, {"db", "runs.sqlite"}};
  p.simulated = true;
  RegimeReport r;
  r.regime = Regime::Headroom;
  r.confidence = 0.91;
  r.evidence = {{"rule", "mean power well under the limit"}};
  r.measurement.steps = 139;
  r.measurement.energy_per_step_J = 27.5;
  r.measurement.energy_per_step_ci_J = {27.25, 27.75};
  r.measurement.avg_power_W = 68.4;
  p.report = r;
  return p;
}

TEST(ProbeView, TextAndJsonShowTheSameRegimeAndEnergy) {
  const ProbeReport p = headroom_probe("sim:l4", 3);
  const nlohmann::json j = to_json(p);
  const std::string text = to_text(p);
  EXPECT_EQ(j["regime"], "headroom");
  EXPECT_NE(text.find("regime: headroom (confidence 0.91)"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(j["measurement"]["energy_per_step_J"].get<double>(), 27.5);
  EXPECT_NE(text.find("27.50 J  [27.25, 27.75]"), std::string::npos) << text;
  EXPECT_EQ(j["samples"], 6000);
  EXPECT_NE(text.find("run 3: sim:resnet50 on sim:l4 (NVIDIA L4), 60.0 s simulated, 6000 samples"),
            std::string::npos)
      << text;
}

TEST(ProbeView, AJobShowsEachGpusRegimeAndTheJobsFigures) {
  JobProbeReport jp;
  jp.gpus = {headroom_probe("nvml:0", 1), headroom_probe("nvml:1", 2)};
  jp.gpus[1].report->regime = Regime::CapBound;
  jp.job = jp.gpus[0].report->measurement;
  jp.job->energy_per_step_J = 55.0;
  jp.job_regime = Regime::CapBound;
  jp.spread = GpuSpread{};
  jp.spread->highest_gpu = 1;
  const nlohmann::json j = to_json(jp);
  const std::string text = to_text(jp);
  EXPECT_EQ(j["gpus"][1]["regime"], "cap-bound");
  EXPECT_NE(text.find("nvml:1 (NVIDIA L4): cap-bound (confidence 0.91), 68.4 W mean, 27.50 J/step"),
            std::string::npos)
      << text;
  EXPECT_EQ(j["job"]["regime"], "cap-bound");
  EXPECT_DOUBLE_EQ(j["job"]["measurement"]["energy_per_step_J"].get<double>(), 55.0);
  EXPECT_NE(text.find("job on 2 GPUs: cap-bound;"), std::string::npos) << text;
  EXPECT_NE(text.find("energy per step 55.00 J"), std::string::npos) << text;
  EXPECT_NE(text.find("(highest: nvml:1)"), std::string::npos) << text;
}

TEST(ProbeView, NoTextWithoutARegime) {
  ProbeReport p = headroom_probe("sim:l4", 4);
  p.report.reset();
  p.failure = "the command failed";
  EXPECT_EQ(to_text(p), "");
}

}  // namespace
}  // namespace regime::session
