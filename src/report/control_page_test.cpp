#include "report/control_page.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::report {
namespace {

using nlohmann::json;

// A stored control run of one GPU that lowered its limit twice and put it back.
ControlRunRecord hot_run() {
  ControlRunRecord r;
  r.id = 4;
  r.started_at_utc = "2026-12-02T13:00:00Z";
  r.device = "sim:h200";
  r.gpu_name = "NVIDIA H200";
  r.gpu_uuid = "GPU-1";
  r.workload = "sim:resnet50";
  r.policy = "thermal";
  r.report = {
      {"engaged", true},
      {"reason", "thermal: controlling from the start"},
      {"dry_run", false},
      {"limit_before_W", 700},
      {"limit_after_W", 700},
      {"duration_s", 600},
      {"measurement", {{"window_start_s", 1030}, {"window_end_s", 1600}, {"steps", 9000}}},
      {"actions",
       {{{"t_s", 1100}, {"old_limit_W", 700}, {"limit_W", 665}, {"applied", true}, {"why", "hot"}},
        {{"t_s", 1120},
         {"old_limit_W", 665},
         {"limit_W", 630},
         {"applied", true},
         {"why", "hot"}}}},
      {"trace",
       {{"files", {"/s/runs/control-x-gpu0.trace.csv"}}, {"whole_s", 300}, {"bucket_s", 10}}}};
  return r;
}

Trace hot_trace() {
  Trace t;
  for (int i = 0; i <= 600; ++i) {
    Sample s;
    s.t_s = 1000 + i;
    s.power_W = 500 + i % 7;
    s.temp_C = 85;
    s.sm_MHz = 1700;
    s.limit_W = s.t_s < 1100 ? 700 : s.t_s < 1120 ? 665 : 630;
    t.samples.push_back(s);
  }
  return t;
}

TEST(ControlPage, TimesRunFromTheFirstReadingAndTheLimitIsDrawnWhole) {
  PageOptions po;
  po.columns = 10;  // fewer columns than the limit's points
  const json page = build_control_page_data(hot_run(), 0, hot_trace(), {}, po);
  EXPECT_EQ(page["run"]["id"], "control:4");
  EXPECT_EQ(page["run"]["trace_path"], "/s/runs/control-x-gpu0.trace.csv");
  EXPECT_EQ(page["timeline"]["t0_s"], 1000);
  EXPECT_FALSE(page["timeline"]["series"]["limit_W"]["reduced"].get<bool>());
  EXPECT_TRUE(page["timeline"]["series"]["power_W"]["reduced"].get<bool>());
  const json& actions = page["control"]["actions"];
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0]["t_s"], 100);
  EXPECT_EQ(actions[1]["limit_W"], 630);
  EXPECT_EQ(page["timeline"]["window_s"], json::array({30, 600}));
  // It changed the limit and the limit after the run is the one before: restored.
  EXPECT_EQ(page["restore"]["restored"], true);
  EXPECT_EQ(page["control"]["figures"]["kind"], nullptr);
}

TEST(ControlPage, SegmentsAndWindowsAreToldApart) {
  WindowFigures seg{"segment", 1000, 1180,  3000,  false, 32, 31.9,
                    32.1,      0.06, 0.059, 0.061, 500,   85, 700};
  const json segments = build_control_page_data(hot_run(), 0, hot_trace(), {seg, seg}, {});
  EXPECT_EQ(segments["control"]["figures"]["kind"], "segments");
  EXPECT_EQ(segments["control"]["figures"]["rows"][0]["t1_s"], 180);
  WindowFigures base = seg, ctl = seg;
  base.kind = "baseline";
  ctl.kind = "controlled";
  const json windows = build_control_page_data(hot_run(), 0, hot_trace(), {base, ctl, base}, {});
  EXPECT_EQ(windows["control"]["figures"]["kind"], "evaluation");
  EXPECT_EQ(windows["control"]["figures"]["rows"][1]["energy_per_step_ci_J"],
            json::array({31.9, 32.1}));
}

TEST(ControlPage, AGpuOfAJobIsNamedByItsDeviceOrByWhatOnlyItsNameOrUuidHolds) {
  ControlRunRecord job = hot_run();
  job.device = "nvml:all";
  job.report["gpus"] = nlohmann::json::array();
  for (int i = 0; i < 3; ++i)
    job.report["gpus"].push_back({{"device", "nvml:" + std::to_string(i)},
                                  {"gpu", i == 2 ? "NVIDIA A100" : "NVIDIA H200"},
                                  {"uuid", "GPU-job-" + std::to_string(i)}});
  EXPECT_EQ(control_gpu_named(job, "nvml:1"), 1u);
  EXPECT_EQ(control_gpu_named(job, "A100"), 2u);
  EXPECT_EQ(control_gpu_named(job, "job-0"), 0u);
  for (const char* several_or_none : {"H200", "nvml:", "nvml:3", ""}) {
    try {
      control_gpu_named(job, several_or_none);
      ADD_FAILURE() << "'" << several_or_none << "' named one GPU";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::NotFound);
      EXPECT_NE(std::string(e.what()).find("nvml:0, nvml:1, nvml:2"), std::string::npos)
          << e.what();
    }
  }
  // A run of one GPU: its own device, name or UUID names it.
  const ControlRunRecord one = hot_run();
  EXPECT_EQ(control_gpu_named(one, "sim:h200"), 0u);
  EXPECT_EQ(control_gpu_named(one, "GPU-1"), 0u);
  EXPECT_THROW(control_gpu_named(one, "nvml:1"), Error);
}

TEST(ControlPage, ARecordWithoutATraceOrATraceWithoutSamplesIsRefused) {
  ControlRunRecord old = hot_run();
  old.report.erase("trace");
  try {
    control_trace_file(old, 0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
  }
  EXPECT_THROW(build_control_page_data(hot_run(), 0, Trace{}, {}, {}), Error);
  EXPECT_THROW(control_trace_file(hot_run(), 1), Error);
}

}  // namespace
}  // namespace regime::report
