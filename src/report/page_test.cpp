#include "report/page.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::report {
namespace {

using nlohmann::json;

RunRecord run(int64_t id, const std::string& gpu, const std::string& workload, double energy_J,
              const std::string& per = "step", const std::string& status = "done") {
  RunRecord r;
  r.id = id;
  r.gpu_name = gpu;
  r.device = "sim:h200";
  r.workload = workload;
  r.status = status;
  r.regime = "cap-bound";
  r.confidence = 0.9;
  if (status == "done")
    r.report = {{"regime", "cap-bound"},
                {"confidence", 0.9},
                {"advice", "lower the cap"},
                {"evidence", {{"sw_power_cap_fraction", 0.97}}},
                {"measurement",
                 {{"per", per},
                  {"gpu", 0},
                  {"steps", 100},
                  {"energy_per_step_J", energy_J},
                  {"energy_per_step_ci_J", {energy_J - 1, energy_J + 1}},
                  {"time_per_step_s", 0.1},
                  {"time_per_step_ci_s", {0.09, 0.11}},
                  {"avg_power_W", 650},
                  {"window_start_s", 1005.0},
                  {"window_end_s", 1050.0}}}};
  return r;
}

Trace trace_of(size_t points) {
  Trace t;
  for (int i = 0; i <= 60; ++i) {
    Sample s;
    s.t_s = 1000 + i;
    s.power_W = 600 + i;
    s.limit_W = 700;
    s.temp_C = 50 + i * 0.1;
    s.sm_MHz = 1980;
    t.samples.push_back(s);
  }
  for (size_t i = 0; i < points; ++i)
    t.power_points.push_back({1000 + 60.0 * double(i) / double(points), 500.0 + double(i % 7)});
  for (int i = 0; i < 30; ++i) t.steps.push_back({i, 1001.0 + i, 1001.5 + i});
  return t;
}

TEST(ReportPage, TimelineUsesThePowerBufferRelativeTimeAndSaysWhatWasReduced) {
  const RunRecord r = run(7, "NVIDIA H200", "sim:resnet50", 100);
  const json page = build_page_data(r, trace_of(3000), {r}, {.columns = 100, .generated_utc = ""});
  const json& tl = page["timeline"];
  EXPECT_EQ(tl["power_source"], "the driver's power buffer");
  EXPECT_DOUBLE_EQ(tl["t0_s"].get<double>(), 1000);
  EXPECT_EQ(tl["window_s"], json({5.0, 50.0}));
  const json& power = tl["series"]["power_W"];
  EXPECT_TRUE(power["reduced"].get<bool>());
  EXPECT_EQ(power["input_points"], 3000);
  EXPECT_LE(power["points"].get<size_t>(), 200u);
  EXPECT_DOUBLE_EQ(power["t_s"][0].get<double>(), 0);
  EXPECT_FALSE(tl["series"]["temp_C"]["reduced"].get<bool>());
  EXPECT_EQ(tl["series"]["temp_C"]["points"], 61);
  EXPECT_EQ(tl["series"]["step_ms"]["points"], 30);
  EXPECT_DOUBLE_EQ(tl["series"]["step_ms"]["value"][0].get<double>(), 500);
  EXPECT_EQ(page["regime"]["name"], "cap-bound");
}

TEST(ReportPage, WithoutThePowerBufferPowerComesFromTheSamples) {
  const RunRecord r = run(7, "NVIDIA H200", "sim:resnet50", 100);
  const json page = build_page_data(r, trace_of(0), {r}, {});
  EXPECT_EQ(page["timeline"]["power_source"], "samples (instantaneous power)");
  EXPECT_EQ(page["timeline"]["series"]["power_W"]["points"], 61);
}

TEST(ReportPage, ComparisonTakesTheNewestRunOfEachPairInTheSameUnit) {
  const RunRecord current = run(5, "NVIDIA H200", "sim:resnet50", 100);
  const std::vector<RunRecord> store{
      run(9, "NVIDIA H200", "sim:resnet50", 90),        // same pair as the one shown: left out
      run(8, "NVIDIA H200", "sim:bert", 50),            // newest of its pair
      run(3, "NVIDIA H200", "sim:bert", 55),            // older: left out
      run(6, "NVIDIA A100", "sim:resnet50", 120),       // another GPU
      run(4, "NVIDIA A100", "sim:idle", 80, "second"),  // another unit
      run(10, "NVIDIA A100", "sim:gemm", 0, "step", "running"),
      current};
  const json c = comparison_rows(current, store);
  ASSERT_EQ(c["rows"].size(), 3u);
  EXPECT_EQ(c["rows"][0]["id"], 8);
  EXPECT_EQ(c["rows"][1]["id"], 6);
  EXPECT_EQ(c["rows"][2]["id"], 5);
  EXPECT_TRUE(c["rows"][2]["current"].get<bool>());
  EXPECT_EQ(c["rows"][0]["energy_per_step_ci_J"], json({49.0, 51.0}));
  EXPECT_EQ(c["left_out_other_unit"], 1);
  EXPECT_EQ(c["left_out_unmeasured"], 1);
}

TEST(ReportPage, RefusesARunWithoutAReportOrWithoutSamplesOfItsGpu) {
  const RunRecord running = run(1, "NVIDIA H200", "x", 0, "step", "running");
  EXPECT_THROW(build_page_data(running, trace_of(0), {}, {}), Error);
  RunRecord r = run(2, "NVIDIA H200", "x", 10);
  r.report["measurement"]["gpu"] = 3;
  EXPECT_THROW(build_page_data(r, trace_of(0), {}, {}), Error);
}

TEST(ReportHtml, InlinesTheLibraryAndTheDataSoNothingEndsTheScriptEarly) {
  RunRecord r = run(2, "NVIDIA H200", "python train.py </script><script>alert(1)</script>", 10);
  const json page = build_page_data(r, trace_of(0), {r}, {});
  const std::string html = render_html(page, "var echarts = {version: 'test'};");
  EXPECT_NE(html.find("var echarts = {version: 'test'};"), std::string::npos);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_EQ(html.rfind("</html>"), html.size() - 8);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_THROW(render_html(page, "x = '</SCRIPT>';"), Error);
  EXPECT_THROW(render_html(page, ""), Error);
}

TEST(ReportPage, APhasedRunsTimelineCarriesItsPhasesOnTheTimelinesClock) {
  RunRecord r = run(7, "NVIDIA H200", "sim:phased", 100);
  r.report["phases"] = json::array({{{"regime", "cap-bound"},
                                     {"energy_fraction", 0.8},
                                     {"time_fraction", 0.5},
                                     {"avg_power_W", 690},
                                     {"steps", 90},
                                     {"spans", {{1004.0, 1012.0}, {1020.0, 1028.0}}}},
                                    {{"regime", "underutilized"},
                                     {"energy_fraction", 0.2},
                                     {"time_fraction", 0.5},
                                     {"avg_power_W", 127},
                                     {"steps", 40},
                                     {"spans", {{1012.0, 1020.0}, {1028.0, 1036.0}}}}});
  r.report["phase_cycle_s"] = 16.0;
  const json page = build_page_data(r, trace_of(0), {r}, {.columns = 100, .generated_utc = ""});
  const json& phases = page["timeline"]["phases"];
  ASSERT_EQ(phases.size(), 2u) << page["timeline"].dump();
  EXPECT_EQ(phases[0]["regime"], "cap-bound");
  EXPECT_EQ(phases[0]["energy_fraction"], 0.8);
  EXPECT_EQ(phases[1]["spans_s"], json({{12.0, 20.0}, {28.0, 36.0}}));  // t0 = 1000 s
  EXPECT_EQ(page["timeline"]["phase_cycle_s"], 16.0);
  EXPECT_NE(render_html(page, "/* chart library */").find("phase-legend"), std::string::npos);
}

TEST(ReportPage, ASteadyRunHasNoPhasesAndMalformedOnesAreLeftOut) {
  const RunRecord r = run(7, "NVIDIA H200", "sim:resnet50", 100);
  const json page = build_page_data(r, trace_of(0), {r}, {.columns = 100, .generated_utc = ""});
  EXPECT_TRUE(page["timeline"]["phases"].empty());
  EXPECT_TRUE(page["timeline"]["phase_cycle_s"].is_null());
  const json report = {{"phases",
                        {{{"regime", "idle"}, {"spans", json::array()}},
                         {{"spans", {{1.0, 2.0}}}},
                         {{"regime", "headroom"}, {"spans", {{1.0, 2.0}, {"x", 3}}}}}}};
  const json bands = phase_bands(report, 1.0);
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_EQ(bands[0]["regime"], "headroom");
  EXPECT_EQ(bands[0]["spans_s"], json({{0.0, 1.0}}));
}

}  // namespace
}  // namespace regime::report
