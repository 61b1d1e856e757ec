// regime study end to end through the binary: simulated pairs in each regime (the T4 keeps its
// limit and never picks 60 W, the L4 gains from a lower cap, an underutilized H200 is not swept),
// and the fake NVML: without --actuate or under REGIME_READ_ONLY nothing is set and the sweep
// command to run is printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class StudyCli : public ::testing::Test {
 protected:
  json study_json(const std::vector<std::string>& extra, int expect_status = 0) {
    std::vector<std::string> args = {"study", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = sb_.regime(args);
    EXPECT_EQ(r.status, expect_status) << r.err;
    return json::parse(r.out);
  }
  test::Sandbox sb_;
};

TEST_F(StudyCli, T4Vgg16IsCapBoundSweptAndNeverPicks60W) {
  json j = study_json({"--device", "sim:t4", "--workload", "sim:vgg16"});
  EXPECT_EQ(j["regime"]["regime"], "cap-bound");
  ASSERT_TRUE(j["sweep"].is_object());
  EXPECT_GE(j["sweep"]["probes"].get<int>(), 2);
  // The planned grid runs from the 70 W limit down to the 60 W minimum.
  EXPECT_EQ(j["plan"]["caps_W"].front().get<double>(), 70.0);
  EXPECT_EQ(j["plan"]["caps_W"].back().get<double>(), 60.0);
  EXPECT_NE(j["decision"]["cap_W"].get<double>(), 60.0);
  EXPECT_TRUE(j["skipped_reason"].is_null());
  // The T4's twin is calibrated across its range: the search trusts its curve as it is.
  EXPECT_EQ(j["sweep"]["curve"]["model"], "twin");
  EXPECT_TRUE(j["sweep"]["curve"]["spec_calibrated"].get<bool>());
}

TEST_F(StudyCli, L4Resnet50ChoosesALowerCapWithItsInterval) {
  json j = study_json({"--device", "sim:l4", "--workload", "sim:resnet50"});
  ASSERT_TRUE(j["decision"].is_object());
  EXPECT_FALSE(j["decision"]["keep_default"].get<bool>());
  EXPECT_LT(j["decision"]["cap_W"].get<double>(), 72.0);
  double change = j["decision"]["energy_change_pct"].get<double>();
  EXPECT_LT(change, -5.0);
  auto ci = j["decision"]["energy_change_ci_pct"];
  ASSERT_TRUE(ci.is_array());
  EXPECT_LE(ci[0].get<double>(), change);
  EXPECT_GE(ci[1].get<double>(), change);
  EXPECT_LT(ci[1].get<double>(), 0.0);  // the whole interval is a saving
  // The L4's twin is calibrated at one end of its range only: its curve is relied on less.
  EXPECT_FALSE(j["sweep"]["curve"]["spec_calibrated"].get<bool>());
  EXPECT_NE(j["after"].get<std::string>().find("restored the original limit 72 W"),
            std::string::npos);
}

TEST_F(StudyCli, H200Resnet18CifarIsUnderutilizedAndNotSwept) {
  json j = study_json({"--device", "sim:h200", "--workload", "sim:resnet18_cifar"});
  EXPECT_EQ(j["regime"]["regime"], "underutilized");
  EXPECT_TRUE(j["sweep"].is_null());
  EXPECT_TRUE(j["decision"].is_null());
  EXPECT_NE(j["skipped_reason"].get<std::string>().find("waste"), std::string::npos);
}

TEST_F(StudyCli, TextVerdictAndOutFolder) {
  fs::path out = sb_.path() / "out";
  auto r = sb_.regime(
      {"study", "--device", "sim:h200", "--workload", "sim:resnet50", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("regime: headroom"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3. decision:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("95% CI) against 700 W"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4. restored the original limit 700 W"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out / "probe.trace.csv"));
  EXPECT_TRUE(fs::exists(out / "probe.steps.csv"));
  json j = json::parse(test::read_text(out / "study.json"));
  EXPECT_EQ(j["regime"]["regime"], "headroom");
  // Headroom: no planned cap above the observed draw x 1.15 but the default limit.
  double draw = j["regime"]["measurement"]["avg_power_W"].get<double>();
  for (const auto& c : j["plan"]["caps_W"])
    if (c.get<double>() != 700.0) {
      EXPECT_LT(c.get<double>(), draw * 1.15);
    }
}

TEST_F(StudyCli, BadInputIsRefusedClearly) {
  auto r = sb_.regime({"study", "--device", "sim:t4"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--workload sim:NAME"), std::string::npos) << r.err;
  r = sb_.regime(
      {"study", "--device", "sim:t4", "--workload", "sim:vgg16", "--strategy", "greedy"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("greedy"), std::string::npos) << r.err;
}

// The fake NVML: a physical GPU whose workload would draw 350 W, capped at 280 W (not the default).
class StudyNvmlCli : public StudyCli {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        json::parse(
            R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-study","min_limit_W":100,)"
            R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":350}]})"),
        test::Sandbox::holding("GPU-fake-study", 280));
  }
  double limit_W() const { return sb_.fake_limit_W("GPU-fake-study"); }
  std::vector<std::string> args(std::vector<std::string> flags) const {
    // The command never ends: a characterization run, stopped once the study has decided.
    std::vector<std::string> a = {"study", "--device",     "nvml:0", "--probe-seconds",
                                  "2",     "--step-regex", "step",   "--stop-after-decision"};
    a.insert(a.end(), flags.begin(), flags.end());
    a.insert(a.end(), {"--", "sh", "-c", "while true; do echo step; sleep 0.05; done"});
    return a;
  }
};

TEST_F(StudyNvmlCli, WithoutActuateNothingChangesAndTheCommandIsPrinted) {
  auto r = sb_.regime(args({}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(limit_W(), 280.0);
  EXPECT_NE(r.out.find("regime: cap-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--actuate was not given: nothing was changed"), std::string::npos);
  EXPECT_NE(r.out.find("regime sweep --device nvml:0 --caps 300,280,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--step-regex step --actuate -- sh -c 'while true; do echo step; sleep "
                       "0.05; done'"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(sb_.path() / "state" / "power-limits" / "GPU-fake-study.json"));
}

TEST_F(StudyNvmlCli, ReadOnlyEnvironmentSetsNothingEvenWithActuate) {
  sb_.env["REGIME_READ_ONLY"] = "1";
  auto r = sb_.regime(args({"--actuate", "--apply", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(limit_W(), 280.0);
  json j = json::parse(r.out);
  EXPECT_TRUE(j["sweep"].is_null());
  EXPECT_NE(j["skipped_reason"].get<std::string>().find("REGIME_READ_ONLY"), std::string::npos);
  EXPECT_NE(j["sweep_command"].get<std::string>().find("--actuate"), std::string::npos);
}

TEST_F(StudyNvmlCli, WithActuateSweepsAndRestoresTheOriginalLimit) {
  auto r = sb_.regime(args({"--actuate", "--settle-s", "0.2", "--probe-s", "1", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);  // the command's "step" lines went to stderr
  EXPECT_EQ(j["regime"]["regime"], "cap-bound");
  ASSERT_TRUE(j["sweep"].is_object());
  EXPECT_GE(j["sweep"]["probes"].get<int>(), 3);
  EXPECT_LT(j["decision"]["cap_W"].get<double>(), 280.0);  // the fake's time does not grow
  EXPECT_EQ(limit_W(), 280.0);
}

TEST_F(StudyNvmlCli, ApplyLeavesTheChosenCapAndJournalsTheOriginal) {
  auto r =
      sb_.regime(args({"--actuate", "--apply", "--settle-s", "0.2", "--probe-s", "1", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  double cap_W = j["decision"]["cap_W"].get<double>();
  EXPECT_EQ(limit_W(), cap_W);
  EXPECT_NE(j["after"].get<std::string>().find("applied"), std::string::npos);
  EXPECT_TRUE(fs::exists(sb_.path() / "state" / "power-limits" / "GPU-fake-study.json"));
  auto restored = sb_.regime({"restore"});
  EXPECT_EQ(restored.status, 0) << restored.err;
  EXPECT_EQ(limit_W(), 280.0);
}

TEST_F(StudyNvmlCli, ApplyWithoutActuateIsRefusedBeforeAnyWork) {
  auto r = sb_.regime(args({"--apply"}));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--actuate"), std::string::npos) << r.err;
  EXPECT_EQ(limit_W(), 280.0);
}

}  // namespace
}  // namespace regime
