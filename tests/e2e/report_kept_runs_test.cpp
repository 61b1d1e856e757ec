// End-to-end: `regime report sweep:ID` and `study:ID` on a run database filled by a simulated
// sweep and studies: a sweep drawn from its kept table with its decision as kept, a study with
// the probe trace its --out folder holds (or without a timeline, saying why, when it had none),
// and clear errors for a trace gone missing and for an id of another kind.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/report_page.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ReportKeptRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = {{"REGIME_STATE_DIR", (dir_.path / "state").string()}};
    // probe 1, then sweep:1 (a sweep), sweep:2 (study:1's, with --out), sweep:3 (study:2's).
    run_json(
        {"probe", "--device", "sim:l4", "--workload", "sim:gemm", "--seconds", "10", "--json"});
    sweep_ = run_json({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50", "--strategy",
                       "exhaustive", "--caps", "72,68,64,60", "--json"});
    study_ =
        run_json({"study", "--device", "sim:l4", "--workload", "sim:resnet50", "--probe-seconds",
                  "30", "--out", (dir_.path / "study1").string(), "--json"});
    run_json({"study", "--device", "sim:l4", "--workload", "sim:resnet50", "--probe-seconds", "30",
              "--json"});
  }
  json run_json(const std::vector<std::string>& args) {
    const test::RunResult r = test::run(args, env_, dir_.path);
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out);
  }
  test::RunResult report(const std::string& run, const fs::path& out) {
    return test::run({"report", run, "-o", out.string(), "--json"}, env_, dir_.path);
  }
  test::TempDir dir_;
  test::Env env_;
  json sweep_, study_;
};

TEST_F(ReportKeptRuns, ASweepIsDrawnFromItsTableWithItsDecisionMarked) {
  ASSERT_EQ(sweep_["stored_as"], "sweep:1");
  const fs::path out = dir_.path / "sweep1.html";
  const test::RunResult r = report("sweep:1", out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["run"], "sweep:1");
  EXPECT_EQ(summary["timeline_points"], 0);
  EXPECT_EQ(summary["sweep_caps"], sweep_["results"].size());
  const json data = test::report_page_data(test::read_text(out));
  EXPECT_EQ(data["kind"], "sweep");
  EXPECT_TRUE(data["timeline"].is_null());
  EXPECT_NE(data["no_timeline"].get<std::string>().find("not the traces"), std::string::npos);
  // Every cap it measured, ascending, each with its intervals; the decision as the sweep made it.
  const json& points = data["sweep"]["points"];
  ASSERT_EQ(points.size(), sweep_["results"].size());
  EXPECT_EQ(points.front()["cap_W"], 60.0);
  EXPECT_EQ(points.back()["cap_W"], 72.0);
  for (const json& p : points) {
    EXPECT_LT(p["energy_per_step_ci_J"][0].get<double>(), p["energy_per_step_J"].get<double>());
    EXPECT_GT(p["time_per_step_ci_s"][1].get<double>(), p["time_per_step_s"].get<double>());
  }
  EXPECT_EQ(data["sweep"]["decision"]["cap_W"], sweep_["decision"]["cap_W"]);
  EXPECT_EQ(data["sweep"]["decision"]["reason"], sweep_["decision"]["reason"]);
  EXPECT_EQ(data["sweep"]["objective"], sweep_["objective"]);
  EXPECT_EQ(data["sweep"]["strategy"], "exhaustive");
  EXPECT_EQ(data["default_cap_W"], 72.0);
  // The probe of the store (another workload) stands beside the sweep's default.
  EXPECT_EQ(summary["comparison_runs"], 2);
}

TEST_F(ReportKeptRuns, AStudysSweepCarriesItsStudysRegime) {
  const fs::path out = dir_.path / "sweep2.html";
  const test::RunResult r = report("sweep:2", out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json data = test::report_page_data(test::read_text(out));
  EXPECT_EQ(data["sweep"]["of"], "study");
  EXPECT_EQ(data["regime"]["name"], study_["regime"]["regime"]);
  EXPECT_EQ(data["regime"]["named_by"], "study:1's probe");
}

TEST_F(ReportKeptRuns, AStudyIsDrawnWithItsProbeTraceSweepAndDecision) {
  const fs::path out = dir_.path / "study1.html";
  const test::RunResult r = report("study:1", out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["run"], "study:1");
  EXPECT_EQ(study_["study_stored_as"], "study:1");  // the study says which id to draw
  EXPECT_GT(summary["trace_points"].get<int>(), 100);
  const json data = test::report_page_data(test::read_text(out));
  EXPECT_EQ(data["kind"], "study");
  EXPECT_EQ(data["title"], "Regime study:1: sim:resnet50 on NVIDIA L4");
  EXPECT_EQ(data["run"]["trace_path"], (dir_.path / "study1" / "probe.trace.csv").string());
  ASSERT_TRUE(data["timeline"].is_object());
  EXPECT_GT(data["timeline"]["steps"].get<int>(), 100);
  EXPECT_EQ(data["regime"]["name"], study_["regime"]["regime"]);
  EXPECT_EQ(data["regime"]["confidence"], study_["regime"]["confidence"]);
  EXPECT_EQ(data["sweep"]["points"].size(), study_["sweep"]["results"].size());
  EXPECT_EQ(data["sweep"]["decision"]["cap_W"], study_["decision"]["cap_W"]);
  // The sweep put the limit the probe ran at back, and the page says so.
  ASSERT_EQ(study_["after"].get<std::string>().rfind("restored", 0), 0u) << study_["after"];
  EXPECT_TRUE(data["restore"]["restored"].get<bool>());
  EXPECT_NE(data["restore"]["text"].get<std::string>().find("Restored: the original power limit"),
            std::string::npos);

  // Its trace gone, the study is refused, naming the file.
  fs::remove(dir_.path / "study1" / "probe.trace.csv");
  const test::RunResult gone = report("study:1", dir_.path / "gone.html");
  EXPECT_NE(gone.status, 0);
  EXPECT_NE(gone.err.find("study:1: its probe trace " +
                          (dir_.path / "study1" / "probe.trace.csv").string() + " is missing"),
            std::string::npos)
      << gone.err;
  EXPECT_FALSE(fs::exists(dir_.path / "gone.html"));
}

TEST_F(ReportKeptRuns, AStudyRunWithoutOutIsDrawnWithoutATimelineAndSaysWhy) {
  const fs::path out = dir_.path / "study2.html";
  const test::RunResult r = report("study:2", out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json data = test::report_page_data(test::read_text(out));
  EXPECT_TRUE(data["timeline"].is_null());
  EXPECT_NE(data["no_timeline"].get<std::string>().find("study:2 was run without --out"),
            std::string::npos);
  EXPECT_EQ(data["sweep"]["points"].size(), study_["sweep"]["results"].size());
}

TEST_F(ReportKeptRuns, AnIdOfAnotherKindIsAClearError) {
  const fs::path out = dir_.path / "x.html";
  // Probes 1 to 4, sweeps 1 to 3: probe 4 asked for as a sweep names what bears the id.
  for (int i = 0; i < 3; ++i)
    run_json({"probe", "--device", "sim:l4", "--workload", "sim:gemm", "--seconds", "5", "--json"});
  const test::RunResult probe_as_sweep = report("sweep:4", out);
  EXPECT_NE(probe_as_sweep.status, 0);
  EXPECT_NE(probe_as_sweep.err.find("no sweep:4 in"), std::string::npos) << probe_as_sweep.err;
  EXPECT_NE(probe_as_sweep.err.find("it holds 4 (`regime report 4` draws it"), std::string::npos)
      << probe_as_sweep.err;
  // And the other way: a sweep's id given as a probe's.
  const test::RunResult sweep_as_probe = report("9", out);
  EXPECT_NE(sweep_as_probe.err.find("no run 9 in"), std::string::npos) << sweep_as_probe.err;
  EXPECT_NE(sweep_as_probe.err.find("`regime runs` lists what it holds"), std::string::npos)
      << sweep_as_probe.err;
  const test::RunResult sweep_as_study = report("study:3", out);
  EXPECT_NE(sweep_as_study.err.find("no study:3 in"), std::string::npos) << sweep_as_study.err;
  EXPECT_NE(sweep_as_study.err.find("it holds 3 and sweep:3"), std::string::npos)
      << sweep_as_study.err;
  const test::RunResult decision = report("decision:1", out);
  EXPECT_NE(decision.status, 0);
  EXPECT_NE(decision.err.find("is a decision: regime report draws the sweep it decides "
                              "(`regime report sweep:1`)"),
            std::string::npos)
      << decision.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace regime
