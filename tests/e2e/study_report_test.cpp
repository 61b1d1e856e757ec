// End-to-end: the page of a study (`regime study --report FILE`, and `regime report study:ID`
// from the store): the runs beside it are those of the store the study was kept in (--db), never
// the default store's; a study of a job's two GPUs (the fake NVML) draws every GPU: its probe
// timeline, its regime and what the job's one cap did to it; a study kept before its record held
// its --out folder says how to draw its timeline, and does with that folder given.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "support/cli_run.hpp"
#include "support/report_page.hpp"
#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class StudyReport : public ::testing::Test {
 protected:
  test::RunResult run(const std::vector<std::string>& args) {
    return test::run(args, sb_.env, sb_.path());
  }
  json page(const fs::path& html) { return test::report_page_data(test::read_text(html)); }
  std::string own_db() const { return (sb_.path() / "own.sqlite").string(); }

  test::Sandbox sb_;
};

// The workloads of the comparison's rows.
std::set<std::string> compared_workloads(const json& data) {
  std::set<std::string> out;
  for (const json& row : data["comparison"]["rows"]) out.insert(row["workload"].get<std::string>());
  return out;
}

TEST_F(StudyReport, ThePageListsTheRunsOfTheStoreTheStudyWasKeptIn) {
  // The default store holds two probes; the study's own store one, of another workload.
  for (const char* workload : {"sim:gemm", "sim:vgg16"}) {
    const test::RunResult p =
        run({"probe", "--device", "sim:a100", "--workload", workload, "--seconds", "10"});
    ASSERT_EQ(p.status, 0) << p.err;
  }
  const test::RunResult own = run({"probe", "--device", "sim:l4", "--workload",
                                   "sim:resnet18_cifar", "--seconds", "10", "--db", own_db()});
  ASSERT_EQ(own.status, 0) << own.err;
  const fs::path html = sb_.path() / "study.html";
  const test::RunResult study =
      run({"study", "--device", "sim:l4", "--workload", "sim:resnet50", "--probe-seconds", "20",
           "--db", own_db(), "--report", html.string(), "--json"});
  ASSERT_EQ(study.status, 0) << study.err;
  ASSERT_EQ(json::parse(study.out)["study_stored_as"], "study:1");
  // The default store still holds its own two runs: the page could have shown them.
  const test::RunResult defaults = run({"runs", "--json"});
  ASSERT_EQ(defaults.status, 0) << defaults.err;
  EXPECT_NE(defaults.out.find("sim:gemm"), std::string::npos) << defaults.out;

  const std::set<std::string> want = {"sim:resnet50", "sim:resnet18_cifar"};
  const json data = page(html);
  EXPECT_EQ(compared_workloads(data), want) << data["comparison"].dump();
  // Drawn again from the store it was kept in: the same runs beside it.
  const fs::path kept = sb_.path() / "kept.html";
  const test::RunResult again =
      run({"report", "study:1", "--db", own_db(), "-o", kept.string(), "--json"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(compared_workloads(page(kept)), want);
}

TEST_F(StudyReport, AStudyKeptBeforeItsOutFolderWasRecordedSaysHowToDrawItsTimeline) {
  const fs::path out_dir = sb_.path() / "study-out";
  for (const bool with_out : {true, false}) {
    std::vector<std::string> args = {"study",      "--device",     "sim:l4",
                                     "--workload", "sim:resnet50", "--probe-seconds",
                                     "20",         "--db",         own_db()};
    if (with_out) args.insert(args.end(), {"--out", out_dir.string()});
    const test::RunResult study = run(args);
    ASSERT_EQ(study.status, 0) << study.err;
    // Its last line draws it from the store it was kept in.
    const std::string id = with_out ? "1" : "2";
    EXPECT_NE(study.out.find("kept as study:" + id + ": `regime report study:" + id + " --db " +
                             own_db() + " -o study.html` draws it"),
              std::string::npos)
        << study.out;
  }
  // study:1 as a study kept before the record held its --out folder.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(own_db().c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "UPDATE studies SET options_json = json_remove(options_json, '$.out_dir') "
                         "WHERE id = 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  const fs::path html = sb_.path() / "old.html";
  const auto report = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"report", "--db", own_db(), "-o", html.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  test::RunResult r = report({"study:1"});
  ASSERT_EQ(r.status, 0) << r.err;
  json data = page(html);
  EXPECT_TRUE(data["timeline"].is_null());
  EXPECT_EQ(data["no_timeline"],
            "study:1 was kept before the run store recorded a study's --out folder, so this page "
            "cannot find its probe trace: if it was run with --out DIR, `regime report study:1 "
            "--study-out DIR` draws the timeline from DIR/probe.trace.csv");
  // As the message says: its folder given, its timeline is drawn.
  r = report({"study:1", "--study-out", out_dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  data = page(html);
  ASSERT_TRUE(data["timeline"].is_object());
  EXPECT_EQ(data["run"]["trace_path"], (out_dir / "probe.trace.csv").string());
  // A study recorded as run without --out says so.
  r = report({"study:2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(page(html)["no_timeline"].get<std::string>().find("study:2 was run without --out"),
            std::string::npos);
  // The folder names a study's: with a probe's id it is refused.
  r = report({"1", "--study-out", out_dir.string()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--study-out names a study's --out folder"), std::string::npos) << r.err;
}

TEST_F(StudyReport, GpusStudiedInTurnGetAPageEach) {
  // Each study its own folder and page, named by its device.
  const fs::path out_dir = sb_.path() / "turn", html = sb_.path() / "turn.html";
  const test::RunResult study =
      run({"study", "--device", "sim:l4,sim:t4,ambient_C=35", "--workload", "sim:resnet50",
           "--probe-seconds", "20", "--db", own_db(), "--out", out_dir.string(), "--report",
           html.string()});
  ASSERT_EQ(study.status, 0) << study.err;
  const std::vector<std::string> names = {"sim_l4", "sim_t4_ambient_C_35"};
  const std::vector<std::string> gpus = {"NVIDIA L4", "Tesla T4"};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    SCOPED_TRACE(name);
    const fs::path file = sb_.path() / ("turn-" + name + ".html");
    EXPECT_NE(study.err.find("regime: wrote " + file.string()), std::string::npos) << study.err;
    const json data = page(file);
    EXPECT_EQ(data["kind"], "study");
    EXPECT_EQ(data["run"]["gpu_name"], gpus[i]);
    EXPECT_EQ(data["run"]["trace_path"], (out_dir / name / "probe.trace.csv").string());
    ASSERT_TRUE(data["timeline"].is_object());
    EXPECT_TRUE(fs::exists(out_dir / name / "study.json"));
  }
  EXPECT_FALSE(fs::exists(html));
}

class JobStudyReport : public StudyReport {
 protected:
  // GPU 0 draws 230 W of its 300 W limit (headroom); GPU 1 would draw 350 W and is held at its
  // limit (cap-bound): the job's regime is GPU 1's.
  void SetUp() override {
    sb_.use_fake_nvml(json::parse(R"({"gpus": [{"uuid": "GPU-report-0", "demand_W": 230},
                                               {"uuid": "GPU-report-1", "demand_W": 350}]})"));
  }
};

// Each GPU's section of a job's page against the study's own JSON and its --out folder.
void expect_every_gpu_drawn(const json& data, const json& study, const fs::path& out_dir) {
  EXPECT_TRUE(data["timeline"].is_null());  // each GPU's is in its own section
  EXPECT_NE(data["no_timeline"].get<std::string>().find("A job on 2 GPUs"), std::string::npos);
  EXPECT_EQ(data["regime"]["name"], "cap-bound");
  // The cards hold the job's figures, summed over its GPUs.
  EXPECT_EQ(data["measurement"]["energy_per_step_J"],
            study["job"]["measurement"]["energy_per_step_J"]);
  ASSERT_EQ(data["gpus"].size(), 2u) << data.dump().substr(0, 2000);
  for (size_t i = 0; i < 2; ++i) {
    const json& g = data["gpus"][i];
    SCOPED_TRACE(g["device"].dump());
    EXPECT_EQ(g["device"], "nvml:" + std::to_string(i));
    EXPECT_EQ(g["gpu_uuid"], "GPU-report-" + std::to_string(i));
    EXPECT_EQ(g["regime"]["name"], i == 0 ? "headroom" : "cap-bound");
    EXPECT_EQ(g["regime"]["name"], study["job"]["gpus"][i]["regime"]);
    EXPECT_EQ(g["named_job"], i == 1);
    EXPECT_FALSE(g["regime"]["evidence"].empty());
    const fs::path trace = out_dir / ("probe-gpu" + std::to_string(i) + ".trace.csv");
    EXPECT_EQ(g["trace_path"], trace.string());
    // Its own probe's power: GPU 0 well under the limit, GPU 1 at it.
    ASSERT_TRUE(g["timeline"].is_object());
    const json& power = g["timeline"]["series"]["power_W"]["value"];
    ASSERT_GT(power.size(), 20u);
    const double max_W = *std::max_element(power.begin(), power.end());
    if (i == 0)
      EXPECT_LT(max_W, 260);
    else
      EXPECT_GT(max_W, 280);
    EXPECT_FALSE(g["timeline"]["series"]["step_ms"]["value"].empty());
    // The job's one cap, as it fell on this GPU, with its figures at the default and at the cap.
    ASSERT_FALSE(g["sweep"].empty());
    const json& d = g["decision"];
    ASSERT_TRUE(d.is_object());
    EXPECT_EQ(d["cap_W"], study["decision"]["cap_W"]);
    EXPECT_GT(d["at_default"]["energy_per_step_J"].get<double>(), 0);
    EXPECT_GT(d["at_cap"]["energy_per_step_J"].get<double>(), 0);
  }
}

TEST_F(JobStudyReport, AStudyOfTwoGpusDrawsEveryGpusTimelineRegimeAndDecision) {
  const fs::path html = sb_.path() / "job.html", out_dir = sb_.path() / "job-out";
  const test::RunResult study = run({"study",
                                     "--device",
                                     "nvml:0,1",
                                     "--actuate",
                                     "--probe-seconds",
                                     "3",
                                     "--settle-s",
                                     "0.2",
                                     "--probe-s",
                                     "1",
                                     "--step-regex",
                                     "step",
                                     "--stop-after-decision",
                                     "--out",
                                     out_dir.string(),
                                     "--db",
                                     own_db(),
                                     "--report",
                                     html.string(),
                                     "--json",
                                     "--",
                                     "env",
                                     "-u",
                                     "CUDA_VISIBLE_DEVICES",
                                     "sh",
                                     "-c",
                                     "while true; do echo step; sleep 0.05; done"});
  ASSERT_EQ(study.status, 0) << study.err;
  const json j = json::parse(study.out);
  ASSERT_EQ(j["study_stored_as"], "study:1");
  ASSERT_FALSE(j["decision"].is_null()) << j["skipped_reason"];
  EXPECT_EQ(j["job"]["regime_device"], "nvml:1");
  expect_every_gpu_drawn(page(html), j, out_dir);

  // The same study from the store: every GPU again, from the traces its --out folder holds.
  const fs::path kept = sb_.path() / "kept.html";
  const test::RunResult again =
      run({"report", "study:1", "--db", own_db(), "-o", kept.string(), "--json"});
  ASSERT_EQ(again.status, 0) << again.err;
  const json kept_data = page(kept);
  expect_every_gpu_drawn(kept_data, j, out_dir);
  EXPECT_NE(kept_data["restore"]["text"].get<std::string>().find("GPU-report-0, GPU-report-1"),
            std::string::npos)
      << kept_data["restore"];
  // Both GPUs' points are counted as drawn.
  const json summary = json::parse(again.out);
  size_t drawn = 0;
  for (const json& g : kept_data["gpus"])
    for (const auto& [name, s] : g["timeline"]["series"].items())
      drawn += s["points"].get<size_t>();
  EXPECT_EQ(summary["timeline_points"], drawn);
}

}  // namespace
}  // namespace regime
