// Sweeps and studies are kept in the run database and decided again under another objective
// without running again: `regime runs`, `regime recommend --run sweep:ID`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime::test {
namespace {

using nlohmann::json;

class RunsCli : public ::testing::Test {
 protected:
  RunResult regime(const std::vector<std::string>& args) { return sb_.regime(args); }
  json regime_json(const std::vector<std::string>& args) { return sb_.regime_json(args); }
  Sandbox sb_;
};

TEST_F(RunsCli, ASweepIsKeptAndDecidedAgainUnderAnotherObjective) {
  json swept = regime_json({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50",
                            "--strategy", "exhaustive", "--caps", "72,68,64,60", "--json"});
  ASSERT_EQ(swept["stored_as"], "sweep:1");
  double chosen_W = swept["decision"]["cap_W"];
  EXPECT_LT(chosen_W, 72.0);  // the L4 saves energy under a lower cap

  json listed = regime_json({"runs", "--json"});
  ASSERT_EQ(listed["sweeps"].size(), 1u);
  EXPECT_EQ(listed["sweeps"][0]["run"], "sweep:1");
  EXPECT_EQ(listed["sweeps"][0]["kind"], "sweep");
  EXPECT_EQ(listed["sweeps"][0]["decision"]["cap_W"], chosen_W);

  // The same rule on the kept rows gives the same cap, and nothing runs again.
  json again = regime_json({"recommend", "--run", "sweep:1", "--json"});
  ASSERT_EQ(again["workloads"].size(), 1u);
  EXPECT_EQ(again["workloads"][0]["decision"]["cap_W"], chosen_W);
  EXPECT_EQ(regime_json({"runs", "--json"})["sweeps"].size(), 1u);

  // A tight slowdown bound: the cap it picks is no more than 2% slower than the default.
  json bounded =
      regime_json({"recommend", "--run", "sweep:1", "--objective", "max-slowdown:2", "--json"});
  EXPECT_LE(bounded["workloads"][0]["decision"]["time_change_pct"].get<double>(), 2.0);

  RunResult shown = regime({"runs", "show", "sweep:1"});
  EXPECT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("workload,gpu,cap_W,time_s,avg_power_W,unit"), std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find(",60,"), std::string::npos) << shown.out;
}

TEST_F(RunsCli, AStudysSweepIsKeptToo) {
  json study = regime_json({"study", "--device", "sim:l4", "--workload", "sim:resnet50",
                            "--probe-seconds", "30", "--json"});
  ASSERT_TRUE(study["stored_as"].is_string()) << study.dump(2);
  json listed = regime_json({"runs", "--json"});
  ASSERT_EQ(listed["sweeps"].size(), 1u);
  EXPECT_EQ(listed["sweeps"][0]["kind"], "study");
  EXPECT_EQ(listed["sweeps"][0]["run"], study["stored_as"]);
}

TEST_F(RunsCli, UnknownOrWrongRunsAreNamed) {
  RunResult none = regime({"recommend", "--run", "sweep:9"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no sweep:9 in"), std::string::npos) << none.err;
  RunResult probe = regime({"recommend", "--run", "probe:1"});
  EXPECT_EQ(probe.status, 2);
  EXPECT_NE(probe.err.find("--run takes a kept sweep"), std::string::npos) << probe.err;
  RunResult bogus = regime({"runs", "show", "sweep:x"});
  EXPECT_EQ(bogus.status, 2);
  EXPECT_NE(bogus.err.find("expected ID, probe:ID or sweep:ID"), std::string::npos) << bogus.err;
  RunResult neither = regime({"recommend"});
  EXPECT_EQ(neither.status, 2);
  EXPECT_NE(neither.err.find("give --sweep FILE or --run sweep:ID"), std::string::npos)
      << neither.err;
}

}  // namespace
}  // namespace regime::test
