// regime sweep on replay:FILE and regime recommend, run as a user would (the real binary).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "support/cli_run.hpp"
#include "trace/sweep_table.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

fs::path zeus(const std::string& gpu) {
  return fs::path(REGIME_TEST_DATA_DIR) / "zeus" / (gpu + ".sweep.csv");
}

json run_json(const std::vector<std::string>& args, const std::string& name) {
  auto r = test::run(args, {}, test::TempDir("regime-plan-e2e-" + name).path);
  EXPECT_EQ(r.status, 0) << r.err;
  return json::parse(r.out);
}

TEST(SweepReplayCli, SweepJsonHasTheContractFields) {
  auto j = run_json({"sweep", "--device", "replay:" + zeus("V100").string(), "--workload",
                     "imagenet/resnet50/bs128/adadelta", "--strategy", "exhaustive", "--objective",
                     "energy", "--json"},
                    "contract");
  for (const char* k :
       {"device", "workload", "strategy", "objective", "probes", "results", "decision"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["probes"], 7);
  for (const auto& r : j["results"])
    for (const char* k : {"cap_W", "time_per_step_s", "energy_per_step_J", "avg_power_W", "steps"})
      EXPECT_TRUE(r.contains(k)) << k;
  for (const char* k : {"cap_W", "keep_default", "energy_change_pct", "time_change_pct", "reason"})
    EXPECT_TRUE(j["decision"].contains(k)) << k;
  EXPECT_EQ(j["decision"]["cap_W"], 150.0);
  EXPECT_NEAR(j["decision"]["energy_change_pct"].get<double>(), -23.0, 0.05);
  for (const char* k : {"basis", "binding", "noise"})
    EXPECT_TRUE(j["decision"]["evidence"].contains(k)) << k;
  EXPECT_TRUE(j["decision"]["unconstrained"].is_null());
}

// The default objective: least energy within a 10% slowdown, beside the unconstrained optimum
// and how to choose it. 150 W saves 23% but runs 17.8% slower; 175 W saves 18.6% at +9.5%.
TEST(SweepReplayCli, DefaultObjectiveBoundsTheSlowdownAndShowsTheUnconstrainedOptimum) {
  const std::vector<std::string> args{"sweep",
                                      "--device",
                                      "replay:" + zeus("V100").string(),
                                      "--workload",
                                      "imagenet/resnet50/bs128/adadelta",
                                      "--strategy",
                                      "exhaustive"};
  auto with_json = args;
  with_json.push_back("--json");
  auto j = run_json(with_json, "default-objective");
  EXPECT_EQ(j["objective"], "max-slowdown:10");
  EXPECT_EQ(j["decision"]["cap_W"], 175.0);
  EXPECT_LE(j["decision"]["time_change_pct"].get<double>(), 10.0);
  EXPECT_EQ(j["decision"]["unconstrained"]["cap_W"], 150.0);
  EXPECT_EQ(j["decision"]["unconstrained"]["how"], "--objective energy");
  const test::RunResult text =
      test::run(args, {}, test::TempDir("regime-plan-e2e-default-objective-text").path);
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("decision: 175 W"));
  // The Zeus tables count work in epochs.
  EXPECT_THAT(text.out, HasSubstr("unconstrained optimum: 150 W (energy per epoch -23.0%, time "
                                  "per epoch +17.8%); choose it with --objective energy"));
}

// recommend and an exhaustive replay sweep decide the same for every workload and objective.
TEST(SweepReplayCli, RecommendAndSweepAgree) {
  for (const std::string gpu : {"V100", "RTX6000"}) {
    for (const std::string objective : {"energy", "edp", "zeus:0.5", "max-slowdown:10"}) {
      auto rec = run_json(
          {"recommend", "--sweep", zeus(gpu).string(), "--objective", objective, "--json"}, "rec");
      auto table = read_sweep_table(zeus(gpu));
      ASSERT_EQ(rec["workloads"].size(), table.workloads().size());
      // Every 6th workload keeps this test quick; the pure test covers all of them.
      for (size_t i = 0; i < rec["workloads"].size(); i += 6) {
        const auto& w = rec["workloads"][i];
        auto sw = run_json(
            {"sweep", "--device", "replay:" + zeus(gpu).string(), "--workload", w["workload"],
             "--strategy", "exhaustive", "--objective", objective, "--json"},
            "sw");
        EXPECT_EQ(sw["decision"], w["decision"]) << gpu << " " << w["workload"] << " " << objective;
      }
    }
  }
}

// max-slowdown:10 never picks a cap more than 10% slower than the default.
TEST(SweepReplayCli, MaxSlowdownTenNeverPicksACapMoreThanTenPercentSlower) {
  int capped = 0;
  for (const std::string gpu : {"V100", "RTX6000"}) {
    auto rec = run_json(
        {"recommend", "--sweep", zeus(gpu).string(), "--objective", "max-slowdown:10", "--json"},
        "slow");
    for (const auto& w : rec["workloads"]) {
      EXPECT_LE(w["decision"]["time_change_pct"].get<double>(), 10.0) << w["workload"];
      if (!w["decision"]["keep_default"].get<bool>()) ++capped;
    }
  }
  EXPECT_GT(capped, 10);  // the constraint still leaves savings to take
}

TEST(SweepReplayCli, ACapNotInTheTableIsAnErrorNamingTheCaps) {
  auto r = test::run({"sweep", "--device", "replay:" + zeus("V100").string(), "--workload",
                      "imagenet/resnet50/bs128/adadelta", "--caps", "250,130"},
                     {}, test::TempDir("regime-plan-e2e-nocap").path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no row at 130 W"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("250, 225, 200, 175, 150, 125, 100"), std::string::npos) << r.err;
}

TEST(SweepReplayCli, OutOfRangeCapsAndBadObjectivesAreRefusedClearly) {
  auto r = test::run({"sweep", "--device", "replay:" + zeus("V100").string(), "--workload",
                      "imagenet/resnet50/bs128/adadelta", "--caps", "300"},
                     {}, test::TempDir("regime-plan-e2e-range").path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("outside the range"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("100-250 W"), std::string::npos) << r.err;
  auto o = test::run({"recommend", "--sweep", zeus("V100").string(), "--objective", "zeus:1.5"}, {},
                     test::TempDir("regime-plan-e2e-obj").path);
  EXPECT_NE(o.status, 0);
  EXPECT_NE(o.err.find("outside [0, 1]"), std::string::npos) << o.err;
  auto w = test::run({"sweep", "--device", "replay:" + zeus("V100").string(), "--workload", "nope"},
                     {}, test::TempDir("regime-plan-e2e-wl").path);
  EXPECT_NE(w.status, 0);
  EXPECT_NE(w.err.find("no rows for workload 'nope'"), std::string::npos) << w.err;
}

TEST(SweepReplayCli, MalformedSweepTableNamesFileLineAndColumn) {
  const test::TempDir dir("regime-plan-e2e-bad");
  std::ofstream(dir / "bad.csv") << "workload,gpu,cap_W,time_s,avg_power_W,unit\n"
                                    "a,V100,250,1.0,200,epoch\n"
                                    "a,V100,2x0,1.0,200,epoch\n";
  auto r = test::run({"recommend", "--sweep", (dir / "bad.csv").string()}, {}, dir);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("bad.csv:3:8: cap_W '2x0' is not a number"), std::string::npos) << r.err;
}

// A 450 W card swept to 600 W names its default: `recommend --sweep` and a replayed sweep compare
// every row with 450 W and take the time bound from it; a table missing that row says so.
TEST(SweepReplayCli, ANamedDefaultLimitIsTheReference) {
  const test::TempDir dir("regime-plan-e2e-named-default");
  const std::string rows =
      "w,X450,600,0.90,520,step,450\n"
      "w,X450,500,0.95,480,step,450\n"
      "w,X450,400,1.04,392,step,450\n"
      "w,X450,350,1.09,345,step,450\n"
      "w,X450,300,1.18,297,step,450\n"
      "w,X450,250,1.35,249,step,450\n";
  const std::string header = "workload,gpu,cap_W,time_s,avg_power_W,unit,default_limit_W\n";
  std::ofstream(dir / "t.csv") << header << "w,X450,450,1.00,440,step,450\n" << rows;
  std::ofstream(dir / "missing.csv") << header << rows;

  const json rec = run_json({"recommend", "--sweep", (dir / "t.csv").string(), "--json"}, "nd1");
  const json& d = rec["workloads"][0]["decision"];
  EXPECT_EQ(d["cap_W"], 350.0) << d.dump();
  EXPECT_NEAR(d["time_change_pct"].get<double>(), 9.0, 0.05);  // +21% against 600 W
  EXPECT_NEAR(d["energy_change_pct"].get<double>(), (1.09 * 345 / 440 - 1) * 100, 0.05);
  EXPECT_THAT(d["reason"].get<std::string>(), HasSubstr("against the default 450 W"));

  const json sw = run_json({"sweep", "--device", "replay:" + (dir / "t.csv").string(), "--workload",
                            "w", "--strategy", "exhaustive", "--json"},
                           "nd2");
  EXPECT_EQ(sw["decision"]["cap_W"], 350.0);
  ASSERT_EQ(sw["results"].size(), 5u);  // 450 W down: the search lowers the limit or keeps it
  EXPECT_EQ(sw["results"][0]["cap_W"], 450.0);
  EXPECT_NEAR(sw["decision"]["time_change_pct"].get<double>(), 9.0, 0.05);

  const auto text = test::run({"recommend", "--sweep", (dir / "t.csv").string()}, {}, dir);
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("+9.0"));

  const auto missing = test::run({"recommend", "--sweep", (dir / "missing.csv").string()}, {}, dir);
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.err, HasSubstr("names the default limit 450 W but has no row at 450 W"));
}

}  // namespace
}  // namespace regime
