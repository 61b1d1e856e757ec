#include "report/study_page.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::report {
namespace {

using nlohmann::json;

StudyPage study() {
  StudyPage s;
  s.title = "Regime study:2: sim:resnet50 on NVIDIA H200";
  s.probe.device = "sim:h200";
  s.probe.gpu_name = "NVIDIA H200";
  s.probe.gpu_uuid = "GPU-sim-h200";
  s.probe.workload = "sim:resnet50";
  s.probe.status = "done";
  s.probe.report = {{"regime", "cap-bound"},
                    {"confidence", 0.93},
                    {"evidence", {{"sw_power_cap_fraction", 0.98}}},
                    {"measurement",
                     {{"gpu", 0},
                      {"energy_per_step_J", 40.0},
                      {"time_per_step_s", 0.05},
                      {"window_start_s", 5.0},
                      {"window_end_s", 25.0}}}};
  return s;
}

Trace probe_trace(int gpu = 0, double power_W = 690, int seconds = 30) {
  Trace t;
  for (int i = 0; i <= seconds; ++i) {
    Sample s;
    s.t_s = i;
    s.gpu = gpu;
    s.power_W = power_W;
    s.limit_W = 700;
    t.samples.push_back(s);
  }
  return t;
}

// One GPU of a job: its own regime, its energy per step and its window.
StudyGpu job_gpu(int index, const char* regime, double energy_per_step_J, const Trace* trace) {
  return {.device = "nvml:" + std::to_string(index),
          .gpu_name = "NVIDIA Fake GPU",
          .gpu_uuid = "GPU-multi-" + std::to_string(index),
          .regime = {{"regime", regime},
                     {"confidence", 0.8},
                     {"advice", std::string(regime) + " advice"},
                     {"evidence", {{"power_fraction", 0.9}}},
                     {"measurement",
                      {{"gpu", index},
                       {"energy_per_step_J", energy_per_step_J},
                       {"time_per_step_s", 0.05},
                       {"window_start_s", 2.0},
                       {"window_end_s", 8.0 + index}}}},
          .trace = trace,
          .trace_path = "out/probe-gpu" + std::to_string(index) + ".trace.csv"};
}

// The sweep's figures of each GPU at the default 300 W and at 200 W.
json per_gpu_sweep() {
  const auto at = [](double cap_W, double e0_J, double e1_J) {
    return json{{"cap_W", cap_W},
                {"gpus",
                 {{{"device", "nvml:0"}, {"energy_per_step_J", e0_J}, {"avg_power_W", cap_W - 70}},
                  {{"device", "nvml:1"}, {"energy_per_step_J", e1_J}, {"avg_power_W", cap_W}}}}};
  };
  return json::array({at(300, 12.0, 16.0), at(200, 9.0, 10.0)});
}

TEST(ReportStudyPage, AStudyWithItsTraceShowsTheTimelineSweepAndTheLimitPutBack) {
  StudyPage s = study();
  const Trace trace = probe_trace();
  s.trace = &trace;
  s.sweep = {{"points", json::array({{{"cap_W", 600.0}}})}, {"decision", {{"cap_W", 600.0}}}};
  s.whole_run = {{"reached", "end"}, {"steps", 20000}};
  s.restored = LimitRestored{"NVIDIA H200 (GPU-sim-h200)", 700, "2026-12-05T18:00:00Z"};
  s.after = "restored the original limit 700 W";
  const json page = study_page_data(s, {}, {.columns = 50, .generated_utc = ""});
  EXPECT_EQ(page["title"], s.title);
  EXPECT_EQ(page["kind"], "study");
  ASSERT_TRUE(page["timeline"].is_object());
  EXPECT_EQ(page["timeline"]["series"]["power_W"]["input_points"], 31);
  EXPECT_EQ(page["regime"]["name"], "cap-bound");
  EXPECT_EQ(page["sweep"]["decision"]["cap_W"], 600.0);
  EXPECT_FALSE(page.contains("sweep_skipped"));
  EXPECT_EQ(page["whole_run"]["steps"], 20000);
  EXPECT_TRUE(page["restore"]["restored"].get<bool>());
  EXPECT_EQ(page["restore"]["text"],
            "Restored: the original power limit 700 W on NVIDIA H200 (GPU-sim-h200) at "
            "2026-12-05T18:00:00Z.");
}

TEST(ReportStudyPage, AStudyWithoutItsTraceSaysWhyAndWhatTheSweepLeft) {
  StudyPage s = study();
  s.no_trace = "study:2 was run without --out";
  s.sweep_skipped = "the regime warrants no sweep";
  json page = study_page_data(s, {}, {});
  EXPECT_TRUE(page["timeline"].is_null());
  EXPECT_EQ(page["no_timeline"], "study:2 was run without --out");
  EXPECT_EQ(page["sweep_skipped"], "the regime warrants no sweep");
  EXPECT_FALSE(page.contains("whole_run"));
  EXPECT_TRUE(page["restore"].is_null());

  // Where the limit put back is not known, the study's own line stands on the decision card.
  s.sweep = {{"points", json::array()}};
  s.after = "left 600 W set (--apply)";
  page = study_page_data(s, {}, {});
  EXPECT_EQ(page["restore"]["text"], "After the sweep: left 600 W set (--apply).");
  EXPECT_FALSE(page["restore"]["restored"].get<bool>());
  EXPECT_TRUE(page["restore"]["stated"].get<bool>());
}

TEST(ReportStudyPage, AJobsPageDrawsEveryGpusTimelineRegimeAndDecision) {
  StudyPage s = study();
  const Trace gpu0 = probe_trace(0, 230, 10), gpu1 = probe_trace(1, 300, 12);
  s.trace = &gpu0;
  s.gpus = {job_gpu(0, "headroom", 12.0, &gpu0), job_gpu(1, "cap-bound", 16.0, &gpu1)};
  s.regime_gpu = 1;
  s.job_measurement = {
      {"energy_per_step_J", 28.0}, {"time_per_step_s", 0.05}, {"avg_power_W", 265.0}};
  s.per_gpu_sweep = per_gpu_sweep();
  s.sweep = {{"default_limit_W", 300.0},
             {"points", json::array({{{"cap_W", 200.0}}, {{"cap_W", 300.0}}})},
             {"decision", {{"cap_W", 200.0}, {"keep_default", false}}}};
  const json page = study_page_data(s, {}, {.columns = 50, .generated_utc = ""});
  // No timeline above the GPUs' sections: each GPU has its own.
  EXPECT_TRUE(page["timeline"].is_null());
  EXPECT_EQ(page["no_timeline"],
            "A job on 2 GPUs: each GPU's trace is drawn in its own section below.");
  // Nothing said of the limit: both GPUs' traces held it where it was.
  EXPECT_EQ(page["restore"]["changed"], false);
  // The cards hold the job's figures, summed over its GPUs, as its sweep measures the job.
  EXPECT_EQ(page["measurement"]["energy_per_step_J"], 28.0);
  EXPECT_EQ(page["measurement_of"], "the job's 2 GPUs summed");
  ASSERT_EQ(page["comparison"]["rows"].size(), 1u);  // the study's probe, as the job
  EXPECT_EQ(page["comparison"]["rows"][0]["energy_per_step_J"], 28.0);
  const json& gpus = page["gpus"];
  ASSERT_EQ(gpus.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& g = gpus[i];
    EXPECT_EQ(g["device"], "nvml:" + std::to_string(i));
    EXPECT_EQ(g["gpu_uuid"], "GPU-multi-" + std::to_string(i));
    EXPECT_EQ(g["named_job"], i == 1);
    EXPECT_EQ(g["trace_path"], "out/probe-gpu" + std::to_string(i) + ".trace.csv");
    EXPECT_EQ(g["regime"]["advice"], g["regime"]["name"].get<std::string>() + " advice");
    EXPECT_EQ(g["regime"]["evidence"]["power_fraction"], 0.9);
    // Its own trace, on its own GPU, with its own window.
    ASSERT_TRUE(g["timeline"].is_object());
    EXPECT_EQ(g["timeline"]["gpu"], i);
    EXPECT_EQ(g["timeline"]["series"]["power_W"]["input_points"], 11 + 2 * i);
    EXPECT_EQ(g["timeline"]["series"]["power_W"]["value"][0], i == 0 ? 230.0 : 300.0);
    EXPECT_EQ(g["timeline"]["window_s"][1], i == 0 ? 8.0 : 9.0);
    // Its figures at each cap, ascending, and the job's one cap as it fell on this GPU.
    ASSERT_EQ(g["sweep"].size(), 2u);
    EXPECT_EQ(g["sweep"][0]["cap_W"], 200.0);
    EXPECT_EQ(g["decision"]["cap_W"], 200.0);
    EXPECT_EQ(g["decision"]["at_default"]["energy_per_step_J"], i == 0 ? 12.0 : 16.0);
    EXPECT_EQ(g["decision"]["at_cap"]["energy_per_step_J"], i == 0 ? 9.0 : 10.0);
  }
  EXPECT_DOUBLE_EQ(gpus[0]["decision"]["energy_change_pct"].get<double>(), -25.0);
  EXPECT_DOUBLE_EQ(gpus[1]["decision"]["energy_change_pct"].get<double>(), -37.5);
}

TEST(ReportStudyPage, AJobsGpuWithoutATraceOrASweepIsDrawnWithoutThem) {
  const Trace gpu0 = probe_trace(0, 230, 10);
  std::vector<StudyGpu> gpus = {job_gpu(0, "headroom", 12.0, &gpu0),
                                job_gpu(1, "headroom", 13.0, nullptr)};
  gpus[1].trace_path = "not saved";
  const json out = study_gpus_data(gpus, 0, nullptr, nullptr, 50);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0]["timeline"].is_object());
  EXPECT_TRUE(out[1]["timeline"].is_null());
  EXPECT_TRUE(out[1]["sweep"].empty());
  EXPECT_TRUE(out[1]["decision"].is_null());
  // A trace of no sample is refused, naming the GPU.
  const Trace empty;
  gpus[1].trace = &empty;
  EXPECT_THROW(study_gpus_data(gpus, 0, nullptr, nullptr, 50), Error);
}

}  // namespace
}  // namespace regime::report
