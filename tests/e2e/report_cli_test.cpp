// End-to-end: `regime report` on a run database filled by simulated probes: picked by id or by
// GPU and workload, written as one HTML file holding the charting library and the page data,
// downsampled to the columns asked for, with clear errors for a missing run or library.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/report_page.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ReportCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    env_ = {{"REGIME_STATE_DIR", (dir_->path / "state").string()}};
    for (const auto& [device, workload, seconds] :
         {std::tuple{"sim:h200", "sim:gemm", "10"}, std::tuple{"sim:a100", "sim:resnet50", "10"},
          std::tuple{"sim:h200", "sim:resnet50", "30"}}) {
      const test::RunResult r = test::run(
          {"probe", "--device", device, "--workload", workload, "--seconds", seconds, "--json"},
          env_, dir_->path);
      ASSERT_EQ(r.status, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static test::RunResult report(std::vector<std::string> args) {
    args.insert(args.begin(), "report");
    return test::run(args, env_, dir_->path);
  }
  static json page_data(const std::string& html) { return test::report_page_data(html); }
  static test::TempDir* dir_;
  static test::Env env_;
};
test::TempDir* ReportCli::dir_ = nullptr;
test::Env ReportCli::env_;

TEST_F(ReportCli, ARunByIdBecomesOneSelfContainedPage) {
  const fs::path out = dir_->path / "run3.html";
  const test::RunResult r = report({"3", "-o", out.string(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["run_id"], 3);
  EXPECT_EQ(summary["comparison_runs"], 3);
  const std::string html = test::read_text(out);
  EXPECT_EQ(summary["bytes"], html.size());
  EXPECT_NE(html.find("Apache ECharts"), std::string::npos) << "the library is inlined";
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  const json data = page_data(html);
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["run"]["id"], 3);
  EXPECT_EQ(data["run"]["workload"], "sim:resnet50");
  EXPECT_EQ(data["timeline"]["power_source"], "the driver's power buffer");
  EXPECT_GT(data["timeline"]["steps"].get<int>(), 100);
  ASSERT_EQ(data["comparison"]["rows"].size(), 3u);
  EXPECT_TRUE(data["comparison"]["rows"][0]["current"].get<bool>());
}

TEST_F(ReportCli, FewerColumnsDrawFewerPointsAndThePageSaysSo) {
  const fs::path out = dir_->path / "narrow.html";
  const test::RunResult r = report({"3", "-o", out.string(), "--columns", "100", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(r.out);
  EXPECT_LT(summary["timeline_points"].get<int>(), 1000);
  EXPECT_GT(summary["trace_points"].get<int>(), 10000);
  const json power = page_data(test::read_text(out))["timeline"]["series"]["power_W"];
  EXPECT_TRUE(power["reduced"].get<bool>());
  EXPECT_LE(power["points"].get<int>(), 200);
  EXPECT_GT(power["input_points"].get<int>(), 1000);
}

TEST_F(ReportCli, GpuAndWorkloadPickTheNewestFinishedRun) {
  const fs::path out = dir_->path / "a100.html";
  const test::RunResult a100 = report({"--gpu", "A100", "-o", out.string(), "--json"});
  ASSERT_EQ(a100.status, 0) << a100.err;
  EXPECT_EQ(json::parse(a100.out)["run_id"], 2);
  const test::RunResult gemm = report({"--gpu", "sim:h200", "--workload", "gemm", "-o",
                                       (dir_->path / "gemm.html").string(), "--json"});
  ASSERT_EQ(gemm.status, 0) << gemm.err;
  EXPECT_EQ(json::parse(gemm.out)["run_id"], 1);
}

TEST_F(ReportCli, MissingRunsAndLibraryAreClearErrors) {
  const std::string out = (dir_->path / "x.html").string();
  const test::RunResult none = report({"9", "-o", out});
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.err.find("no run 9 in"), std::string::npos) << none.err;
  const test::RunResult nomatch = report({"--workload", "bert", "-o", out});
  EXPECT_NE(nomatch.status, 0);
  EXPECT_NE(nomatch.err.find("matching 'bert'"), std::string::npos) << nomatch.err;
  test::Env env = env_;
  env["REGIME_CHART_JS"] = (dir_->path / "missing.js").string();
  const test::RunResult nolib = test::run({"report", "3", "-o", out}, env, dir_->path);
  EXPECT_NE(nolib.status, 0);
  EXPECT_NE(nolib.err.find("scripts/deps.sh"), std::string::npos) << nolib.err;
  EXPECT_FALSE(fs::exists(out));
  const test::RunResult both = report({"3", "--gpu", "H200", "-o", out});
  EXPECT_EQ(both.status, 2) << both.err;
}

}  // namespace
}  // namespace regime
