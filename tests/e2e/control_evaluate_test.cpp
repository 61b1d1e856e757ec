// regime control --evaluate end to end on the simulator: the `--json` contract; thermal on the
// cap-bound T4 with the CNN workloads changes energy per step by less than its interval (the
// study's finding) and the gate stays out saying why; on a thermal-bound pair the gated
// controller engages, holds its band in the controlled windows, and helps, with intervals; the
// verdict's margins hold on pairs they were not chosen on (scripts/control_verdict_check.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ControlEvaluate : public ::testing::Test {
 protected:
  json evaluate(const std::string& device, const std::string& workload, const std::string& policy,
                const std::string& seconds) {
    return sb_.regime_json({"control", "--device", device, "--workload", workload, "--policy",
                            policy, "--seconds", seconds, "--evaluate", "--json"});
  }
  test::Sandbox sb_;
};

void expect_arm(const json& a) {
  ASSERT_TRUE(a.is_object()) << a.dump();
  for (const char* k : {"energy_per_step_J", "time_per_step_s"}) EXPECT_TRUE(a[k].is_number()) << k;
  for (const char* k : {"energy_per_step_ci_J", "time_per_step_ci_s"}) {
    ASSERT_TRUE(a[k].is_array() && a[k].size() == 2) << k;
    EXPECT_LE(a[k][0].get<double>(), a[k][1].get<double>());
  }
  EXPECT_GE(a["energy_per_step_J"].get<double>(), a["energy_per_step_ci_J"][0].get<double>());
  EXPECT_LE(a["energy_per_step_J"].get<double>(), a["energy_per_step_ci_J"][1].get<double>());
}

// Every key of the contract, with its type.
void expect_contract(const json& j) {
  EXPECT_TRUE(j["policy"].is_string());
  EXPECT_TRUE(j["engaged"].is_boolean());
  EXPECT_TRUE(j["reason"].is_string());
  expect_arm(j["baseline"]);
  expect_arm(j["controlled"]);
  for (const char* k : {"energy_change_pct", "time_change_pct"}) EXPECT_TRUE(j[k].is_number()) << k;
  for (const char* k : {"energy_change_ci_pct", "time_change_ci_pct"}) {
    ASSERT_TRUE(j[k].is_array() && j[k].size() == 2) << k;
    EXPECT_LE(j[k][0].get<double>(), j[k][1].get<double>());
  }
  const std::string v = j["verdict"].get<std::string>();
  EXPECT_TRUE(v == "helps" || v == "no significant effect" || v == "hurts") << v;
  ASSERT_TRUE(j["actions"].is_array());
  for (const auto& a : j["actions"])
    for (const char* k : {"t_s", "temp_C", "power_W", "limit_W"})
      EXPECT_TRUE(a[k].is_number()) << k << " " << a.dump();
}

bool contains(const json& ci, double v) {
  return ci[0].get<double>() <= v && v <= ci[1].get<double>();
}

TEST_F(ControlEvaluate, ThermalOnTheT4WithCnnWorkloadsChangesNothingBeyondTheInterval) {
  for (const char* w : {"sim:resnet50", "sim:vgg16", "sim:densenet121", "sim:mobilenet_v2"}) {
    SCOPED_TRACE(w);
    json j = evaluate("sim:t4", w, "thermal", "2600");
    expect_contract(j);
    EXPECT_TRUE(j["engaged"].get<bool>());
    EXPECT_EQ(j["verdict"], "no significant effect");
    EXPECT_TRUE(contains(j["energy_change_ci_pct"], 0)) << j["energy_change_ci_pct"];
    // The interval of each arm holds the other's level: the change is inside the noise.
    EXPECT_TRUE(contains(j["baseline"]["energy_per_step_ci_J"],
                         j["controlled"]["energy_per_step_J"].get<double>()) ||
                contains(j["controlled"]["energy_per_step_ci_J"],
                         j["baseline"]["energy_per_step_J"].get<double>()))
        << j["baseline"].dump() << j["controlled"].dump();
    EXPECT_TRUE(j["actions"].empty());  // the T4 never reaches its target
  }
}

TEST_F(ControlEvaluate, GatedOnTheT4StaysOutAndSaysWhy) {
  for (const char* w : {"sim:resnet50", "sim:vgg16"}) {
    SCOPED_TRACE(w);
    json j = evaluate("sim:t4", w, "regime-gated", "2600");
    EXPECT_FALSE(j["engaged"].get<bool>());
    EXPECT_EQ(j["regime"], "cap-bound");
    EXPECT_EQ(j["reason"],
              "cap-bound: the firmware already holds power at the limit; temperature control "
              "cannot lower energy per step");
    expect_arm(j["baseline"]);  // the whole run, uncontrolled
    EXPECT_TRUE(j["controlled"].is_null());
    EXPECT_TRUE(j["verdict"].is_null());
    EXPECT_TRUE(j["actions"].empty());
  }
}

// A poorly cooled H200 (30 C air, half the cooling) is thermal-bound; the gated controller
// engages and holds the controlled windows in its band while the baseline ones run hot.
TEST_F(ControlEvaluate, GatedOnAThermalBoundPairEngagesHoldsItsBandAndHelps) {
  json j = evaluate("sim:h200,ambient_C=30,cooling=2", "sim:resnet50", "regime-gated", "1500");
  expect_contract(j);
  EXPECT_EQ(j["regime"], "thermal-bound");
  EXPECT_TRUE(j["engaged"].get<bool>()) << j["reason"];
  const json& p = j["thermal"];
  const double target = p["target_C"].get<double>(), band = p["band_C"].get<double>();
  ASSERT_EQ(j["evaluation"]["windows"].size(), 7u);
  for (const auto& w : j["evaluation"]["windows"]) {
    const double t = w["mean_temp_C"].get<double>();
    if (w["arm"] == "controlled") {
      EXPECT_GE(t, target - band) << w.dump();
      EXPECT_LE(t, target) << w.dump();
      EXPECT_LT(w["mean_limit_W"].get<double>(), 700);
    } else {
      EXPECT_GT(t, target) << w.dump();
      EXPECT_NEAR(w["mean_limit_W"].get<double>(), 700, 1e-6);
    }
  }
  EXPECT_EQ(j["verdict"], "helps");
  EXPECT_LT(j["energy_change_ci_pct"][1].get<double>(), -3);
  EXPECT_GT(j["time_change_ci_pct"][0].get<double>(), 0);  // it costs time, and says so
  double prev_t = -1e9;
  for (const auto& a : j["actions"]) {
    EXPECT_GE(a["limit_W"].get<double>(), p["min_W"].get<double>());
    EXPECT_LE(a["limit_W"].get<double>(), p["max_W"].get<double>());
    EXPECT_LE(std::abs(a["limit_W"].get<double>() - a["old_limit_W"].get<double>()),
              p["step_W"].get<double>() + 1e-6);
    EXPECT_GE(a["t_s"].get<double>() - prev_t, p["dwell_s"].get<double>() - 1e-6);
    prev_t = a["t_s"].get<double>();
  }
  EXPECT_EQ(j["limit_after_W"].get<double>(), 700);
}

// Pairs of the check set of scripts/control_verdict_check.py (GPUs and workloads the margins were
// not chosen on): a controller that never acts gets no verdict; a real saving is found.
TEST_F(ControlEvaluate, TheVerdictMarginsHoldOnHeldOutPairs) {
  for (const char* dev : {"sim:p100,seed=1", "sim:l4,ambient_C=35,cooling=1.5,seed=2"}) {
    SCOPED_TRACE(dev);
    json null_run = evaluate(dev, "sim:densenet121", "thermal:target_C=149", "2560");
    EXPECT_EQ(null_run["verdict"], "no significant effect");
    EXPECT_TRUE(null_run["actions"].empty());
  }
  json helps =
      evaluate("sim:l4,ambient_C=35,cooling=1.5,seed=1", "sim:vit_b_16", "thermal", "2560");
  EXPECT_EQ(helps["verdict"], "helps");
}

TEST_F(ControlEvaluate, BadEvaluationsAreUsageErrors) {
  auto bad = [&](std::vector<std::string> extra, const std::string& needle) {
    std::vector<std::string> a = {"control",   "--device", "sim:t4",  "--workload",
                                  "sim:vgg16", "--policy", "thermal", "--evaluate"};
    a.insert(a.end(), extra.begin(), extra.end());
    auto r = sb_.regime(a);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  };
  bad({"--seconds", "3000", "--windows", "6"}, "--windows must be odd");
  bad({"--seconds", "3000", "--windows", "3"}, "--windows must be odd and in [5, 101]");
  // The T4's 40 s time constant: 8 windows of 2 x 120 s.
  bad({"--seconds", "600"}, "give --seconds 1920 or more");
  bad({"--seconds", "3000", "--dry-run"}, "drop --evaluate for a dry run");
}

}  // namespace
}  // namespace regime
