#include "report/study_page.hpp"

#include <gtest/gtest.h>

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

Trace probe_trace() {
  Trace t;
  for (int i = 0; i <= 30; ++i) {
    Sample s;
    s.t_s = i;
    s.power_W = 690;
    s.limit_W = 700;
    t.samples.push_back(s);
  }
  return t;
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

}  // namespace
}  // namespace regime::report
