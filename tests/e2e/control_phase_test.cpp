// regime control --policy phase end to end on the simulator: on sim:prefill-decode, whose
// compute-bound prefill and memory-bound decode want different caps, it learns each phase's cap,
// sets it at each change of phase and beats the best single cap by more than its interval in an
// interleaved evaluation whose baseline windows hold that single cap; on sim:phased, where one
// cap serves both phases, it stands aside and says so.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime {
namespace {

using nlohmann::json;

json evaluate_phase(test::Sandbox& sb, const std::string& workload) {
  return sb.regime_json({"control", "--device", "sim:h200", "--workload", workload, "--policy",
                         "phase", "--seconds", "1300", "--evaluate", "--json"});
}

TEST(ControlPhase, OnPrefillDecodeEachPhasesCapBeatsTheBestSingleCapBeyondItsInterval) {
  test::Sandbox sb;
  const json j = evaluate_phase(sb, "sim:prefill-decode");
  ASSERT_TRUE(j["engaged"].get<bool>()) << j["reason"];
  const std::string reason = j["reason"].get<std::string>();
  EXPECT_NE(reason.find("the phases want different caps"), std::string::npos) << reason;
  EXPECT_EQ(j["verdict"], "helps");
  // Better than the single cap beyond the interval, and within the +10% time bound.
  EXPECT_LT(j["energy_change_ci_pct"][1].get<double>(), -3) << j["energy_change_ci_pct"];
  EXPECT_LT(j["time_change_ci_pct"][1].get<double>(), 10) << j["time_change_ci_pct"];
  // The baseline windows hold one cap below the default (the best single cap); the controlled
  // ones move between the phases' caps, so their mean limit lies between them.
  std::vector<double> baseline_W, controlled_W;
  for (const json& w : j["evaluation"]["windows"])
    (w["arm"] == "baseline" ? baseline_W : controlled_W).push_back(w["mean_limit_W"]);
  ASSERT_EQ(baseline_W.size(), 4u);
  for (double b : baseline_W) {
    EXPECT_NEAR(b, baseline_W.front(), 0.5);
    EXPECT_LT(b, 700);
  }
  for (double c : controlled_W) EXPECT_GT(std::abs(c - baseline_W.front()), 20) << c;
  // Phase changes set each phase's cap: both a raise and a cut after learning.
  int raised = 0, cut = 0;
  for (const json& a : j["actions"]) {
    if (a["t_s"].get<double>() < 160) continue;
    (a["limit_W"].get<double>() > a["old_limit_W"].get<double>() ? raised : cut)++;
  }
  EXPECT_GT(raised, 20);
  EXPECT_GT(cut, 20);
}

TEST(ControlPhase, OnSimPhasedOneCapServesBothPhasesAndItStandsAsideSayingWhy) {
  test::Sandbox sb;
  const json j = evaluate_phase(sb, "sim:phased");
  EXPECT_FALSE(j["engaged"].get<bool>());
  const std::string reason = j["reason"].get<std::string>();
  EXPECT_NE(reason.find("one cap serves every phase"), std::string::npos) << reason;
  EXPECT_NE(reason.find("best single cap"), std::string::npos) << reason;
  EXPECT_FALSE(j.contains("verdict") && j["verdict"] == "helps") << j.dump(2);
  EXPECT_DOUBLE_EQ(j["limit_after_W"].get<double>(), 700);
}

TEST(ControlPhase, ASteadyWorkloadIsOnePhaseAndItStandsAside) {
  test::Sandbox sb;
  const json j = sb.regime_json({"control", "--device", "sim:h200", "--workload", "sim:resnet50",
                                 "--policy", "phase", "--seconds", "200", "--json"});
  EXPECT_FALSE(j["engaged"].get<bool>());
  EXPECT_NE(j["reason"].get<std::string>().find("one phase"), std::string::npos) << j["reason"];
}

}  // namespace
}  // namespace regime
