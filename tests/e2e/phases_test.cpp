// End-to-end: a job of phases through `regime probe` (the simulated sim:phased) and
// `regime classify --trace` (its recorded trace): both phases listed, the job named by the
// cap-bound one, which holds most of the energy; a steady workload lists none; a sweep and a study
// of it agree on that regime and measure whole cycles.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime {
namespace {

const std::string kPhasedTrace =
    std::string(REGIME_TEST_DATA_DIR) + "/sim_phased/phased_h200.trace.csv";

nlohmann::json parse(const test::RunResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return nlohmann::json::object();
  }
}

void expect_gemm_and_host_phases(const nlohmann::json& j) {
  ASSERT_TRUE(j.contains("phases")) << j.dump(2);
  const auto& phases = j["phases"];
  ASSERT_EQ(phases.size(), 2u) << phases.dump(2);
  EXPECT_EQ(j["regime"], "cap-bound");
  EXPECT_EQ(phases[0]["regime"], "cap-bound");
  EXPECT_EQ(phases[1]["regime"], "underutilized");
  EXPECT_GT(phases[0]["energy_fraction"].get<double>(), 0.75);
  EXPECT_NEAR(phases[0]["time_fraction"].get<double>(), 0.5, 0.05);
  EXPECT_NEAR(phases[0]["avg_power_W"].get<double>(), 690, 20);
  EXPECT_NEAR(phases[1]["avg_power_W"].get<double>(), 130, 20);
  EXPECT_GT(phases[0]["steps"].get<int>(), 500);
  EXPECT_EQ(phases[0]["spans"].size(), 4u);
  EXPECT_NEAR(j["phase_cycle_s"].get<double>(), 16, 0.5);
  const std::string advice = j["advice"].get<std::string>();
  EXPECT_EQ(advice.find("capping barely matters"), std::string::npos) << advice;
  EXPECT_NE(advice.find("so a cap matters for this job"), std::string::npos) << advice;
}

TEST(PhasesCli, ProbeOfAPhasedJobListsBothPhasesAndIsNamedByTheCapBoundOne) {
  test::Sandbox sb;
  const auto r = sb.regime(
      {"probe", "--device", "sim:h200", "--workload", "sim:phased", "--seconds", "64", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_gemm_and_host_phases(parse(r));
}

TEST(PhasesCli, ProbeTextListsThePhases) {
  test::Sandbox sb;
  const auto r =
      sb.regime({"probe", "--device", "sim:h200", "--workload", "sim:phased", "--seconds", "64"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("regime: cap-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("phases (2 kinds, a cycle of 16.0 s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  underutilized "), std::string::npos) << r.out;
}

TEST(PhasesCli, ASteadyWorkloadHasNoPhases) {
  test::Sandbox sb;
  const auto r = sb.regime(
      {"probe", "--device", "sim:h200", "--workload", "sim:resnet50", "--seconds", "30", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = parse(r);
  EXPECT_EQ(j["regime"], "headroom");
  EXPECT_FALSE(j.contains("phases")) << j.dump(2);
  EXPECT_FALSE(j["evidence"].contains("phases"));
}

TEST(PhasesCli, ClassifyOfARecordedPhasedTraceListsThePhases) {
  test::Sandbox sb;
  const auto r = sb.regime({"classify", "--trace", kPhasedTrace, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_gemm_and_host_phases(parse(r));
  const auto text = sb.regime({"classify", "--trace", kPhasedTrace});
  EXPECT_NE(text.out.find("phases (2 kinds"), std::string::npos) << text.out;
}

TEST(PhasesCli, StudyOfAPhasedJobIsNamedByTheCapBoundPhaseAndListsThePhases) {
  test::Sandbox sb;
  const auto r = sb.regime({"study", "--device", "sim:h200", "--workload", "sim:phased,steps=3000",
                            "--probe-seconds", "64", "--quiet", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = parse(r);
  // The study's probe classifies its last 64 s, which start mid-phase, so the power per phase is
  // not the probe's own; the kinds, their order and the naming are.
  const nlohmann::json& regime = j["regime"];
  ASSERT_TRUE(regime.contains("phases")) << j.dump(2);
  ASSERT_EQ(regime["phases"].size(), 2u) << regime["phases"].dump(2);
  EXPECT_EQ(regime["regime"], "cap-bound");
  EXPECT_EQ(regime["phases"][0]["regime"], "cap-bound");
  EXPECT_EQ(regime["phases"][1]["regime"], "underutilized");
  EXPECT_GT(regime["phases"][0]["energy_fraction"].get<double>(), 0.7);
  EXPECT_NEAR(regime["phase_cycle_s"].get<double>(), 16, 0.5);
  const auto text = sb.regime({"study", "--device", "sim:h200", "--workload",
                               "sim:phased,steps=3000", "--probe-seconds", "64", "--quiet"});
  EXPECT_NE(text.out.find("phases (2 kinds"), std::string::npos) << text.out;
}

TEST(PhasesCli, SweepAndStudyOfAPhasedJobAgreeAndMeasureWholeCycles) {
  test::Sandbox sb;
  const auto sweep = sb.regime({"sweep", "--device", "sim:h200", "--workload", "sim:phased",
                                "--caps", "700,560,420", "--quiet", "--json"});
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const nlohmann::json s = parse(sweep);
  EXPECT_EQ(s["regime"], "cap-bound") << s["stop_reason"];
  EXPECT_EQ(s["windows"], "whole cycles of 16.0 s");
  EXPECT_EQ(s["decision"]["windows"], "whole cycles of 16.0 s");
  EXPECT_LT(s["decision"]["cap_W"].get<double>(), 700) << s["decision"].dump(2);

  const auto study = sb.regime({"study", "--device", "sim:h200", "--workload", "sim:phased",
                                "--probe-seconds", "64", "--quiet", "--json"});
  ASSERT_EQ(study.status, 0) << study.err;
  const nlohmann::json j = parse(study);
  EXPECT_EQ(j["regime"]["regime"], "cap-bound");
  EXPECT_EQ(j["sweep"]["stop_reason"].get<std::string>().find("pointless"), std::string::npos)
      << j["sweep"]["stop_reason"];
  EXPECT_LT(j["decision"]["cap_W"].get<double>(), 700) << j["decision"].dump(2);
}

}  // namespace
}  // namespace regime
