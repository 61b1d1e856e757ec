// regime control end to end: on the simulator, the gated controller engages on a thermal-bound
// pair and is judged in energy and time per step against an uncontrolled run of the same length,
// and stays out of a cap-bound pair saying why; against the fake NVML (the real NVML code path),
// the limit stays in [min, default], changes no faster than the dwell, and the original comes back
// after success, a failed workload, SIGTERM and SIGINT, and through `regime restore` after
// kill -9, an evaluation included; without --actuate or with REGIME_READ_ONLY it runs dry: it logs
// what it would set and nothing changes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ControlCli : public ::testing::Test {
 protected:
  json run_json(const std::vector<std::string>& args) { return sb_.regime_json(args); }
  test::Sandbox sb_;
};

bool disjoint(const json& a, const json& b) {
  return a[1].get<double>() < b[0].get<double>() || b[1].get<double>() < a[0].get<double>();
}

// A poorly cooled H200 (30 C ambient, half the nominal cooling) running ResNet-50 is throttled
// by heat at the default limit; the gated controller probes, engages, and lowers the limit.
TEST_F(ControlCli, GatedEngagesOnAThermalBoundPairAndIsJudgedAgainstNoControl) {
  const std::string dev = "sim:h200,ambient_C=30,cooling=2";
  json c = run_json({"control", "--device", dev, "--workload", "sim:resnet50", "--policy",
                     "regime-gated", "--seconds", "600", "--warmup-s", "150", "--json"});
  json b = run_json({"probe", "--device", dev, "--workload", "sim:resnet50", "--seconds", "600",
                     "--warmup-s", "150", "--json"});
  ASSERT_TRUE(c.contains("engaged")) << c.dump(2);
  EXPECT_EQ(c["regime"], "thermal-bound");
  EXPECT_TRUE(c["engaged"].get<bool>()) << c["reason"];
  ASSERT_FALSE(c["actions"].empty());
  const json& p = c["thermal"];
  double prev_t = -1e9;
  for (const auto& a : c["actions"]) {
    EXPECT_GE(a["limit_W"].get<double>(), p["min_W"].get<double>());
    EXPECT_LE(a["limit_W"].get<double>(), p["max_W"].get<double>());
    EXPECT_LE(std::abs(a["limit_W"].get<double>() - a["old_limit_W"].get<double>()),
              p["step_W"].get<double>() + 1e-6);
    EXPECT_GE(a["t_s"].get<double>() - prev_t, p["dwell_s"].get<double>() - 1e-6);
    prev_t = a["t_s"].get<double>();
  }
  EXPECT_EQ(c["limit_after_W"], c["limit_before_W"]);
  EXPECT_EQ(c["limit_after_W"].get<double>(), 700);
  // After the warm-up the controlled run holds its band on average; the uncontrolled one runs
  // above the target throughout.
  EXPECT_LE(c["measurement"]["mean_temp_C"].get<double>(), p["target_C"].get<double>());
  EXPECT_GE(c["measurement"]["mean_temp_C"].get<double>(),
            p["target_C"].get<double>() - p["band_C"].get<double>());
  EXPECT_GT(b["measurement"]["mean_temp_C"].get<double>(), p["target_C"].get<double>());
  // Both runs are measured over the same window; the figures carry intervals.
  double e_c = c["energy_per_step_J"].get<double>();
  double e_b = b["measurement"]["energy_per_step_J"].get<double>();
  double t_c = c["time_per_step_s"].get<double>();
  double t_b = b["measurement"]["time_per_step_s"].get<double>();
  std::printf("controlled:   %.3f J/step [%.3f, %.3f], %.5f s/step [%.5f, %.5f]\n", e_c,
              c["energy_per_step_ci_J"][0].get<double>(),
              c["energy_per_step_ci_J"][1].get<double>(), t_c,
              c["time_per_step_ci_s"][0].get<double>(), c["time_per_step_ci_s"][1].get<double>());
  std::printf("uncontrolled: %.3f J/step [%.3f, %.3f], %.5f s/step [%.5f, %.5f]\n", e_b,
              b["measurement"]["energy_per_step_ci_J"][0].get<double>(),
              b["measurement"]["energy_per_step_ci_J"][1].get<double>(), t_b,
              b["measurement"]["time_per_step_ci_s"][0].get<double>(),
              b["measurement"]["time_per_step_ci_s"][1].get<double>());
  // What the simulator shows (docs/control.md): less energy per step, more time per step, each
  // outside the other's interval.
  EXPECT_LT(e_c, e_b);
  EXPECT_TRUE(disjoint(c["energy_per_step_ci_J"], b["measurement"]["energy_per_step_ci_J"]));
  EXPECT_GT(t_c, t_b);
}

TEST_F(ControlCli, GatedStaysOutOfACapBoundPairAndSaysWhy) {
  auto r = sb_.regime({"control", "--device", "sim:t4", "--workload", "sim:vgg16", "--policy",
                       "regime-gated", "--seconds", "200"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("probe (60 s): cap-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stayed out: cap-bound: the firmware already holds power at the limit; "
                       "temperature control cannot lower energy per step"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("  t="), std::string::npos) << r.out;  // no action
  EXPECT_NE(r.out.find("limit 70 W before, 70 W after (never changed)"), std::string::npos)
      << r.out;
}

// A hotter L4 is thermal-bound too, but once warm it is throttled to below its lowest limit: no
// limit the controller may set would bind, so a probe long enough to see that (150 s; the
// default 60 s still sees the warm-up's higher power) keeps the gate shut and says so.
TEST_F(ControlCli, GatedStaysOutWhenTheCardDrawsLessThanItsLowestLimit) {
  json c = run_json({"control", "--device", "sim:l4,ambient_C=45,cooling=2", "--workload",
                     "sim:resnet50", "--policy", "regime-gated:probe_s=150", "--seconds", "300",
                     "--json"});
  EXPECT_EQ(c["regime"], "thermal-bound");
  EXPECT_FALSE(c["engaged"].get<bool>());
  EXPECT_NE(c["reason"].get<std::string>().find("under the lowest limit 40 W"), std::string::npos)
      << c["reason"];
  EXPECT_TRUE(c["actions"].empty());
}

TEST_F(ControlCli, ThermalOnTheCapBoundT4ChangesNothingMeasurable) {
  json c = run_json({"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--policy",
                     "thermal", "--seconds", "300", "--warmup-s", "60", "--json"});
  json b = run_json({"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds",
                     "300", "--warmup-s", "60", "--json"});
  EXPECT_TRUE(c["engaged"].get<bool>());
  EXPECT_TRUE(c["actions"].empty()) << c["actions"].dump(2);
  EXPECT_FALSE(disjoint(c["energy_per_step_ci_J"], b["measurement"]["energy_per_step_ci_J"]));
}

TEST_F(ControlCli, BadPoliciesAreUsageErrors) {
  auto bad = [&](const std::string& policy, const std::string& needle) {
    auto r = sb_.regime({"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--policy",
                         policy, "--seconds", "100"});
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  bad("pid", "unknown policy");
  bad("thermal:target=80", "unknown parameter 'target'");
  bad("regime-gated:inner=pid", "the inner controllers are thermal, phase");
  bad("regime-gated:probe_s=200", "probe_s must be in");
}

// Under REGIME_READ_ONLY the controller runs dry: it decides on the hot H200 and logs what it
// would set, and nothing is set (the sim's limit stays at its default in every sample).
TEST_F(ControlCli, ReadOnlyRunsDryAndSaysWhatItWouldSet) {
  sb_.env["REGIME_READ_ONLY"] = "1";
  json c = run_json({"control", "--device", "sim:h200,ambient_C=30,cooling=2", "--workload",
                     "sim:resnet50", "--policy", "thermal", "--seconds", "200", "--json"});
  EXPECT_TRUE(c["dry_run"].get<bool>());
  EXPECT_NE(c["dry_run_reason"].get<std::string>().find("REGIME_READ_ONLY"), std::string::npos);
  ASSERT_GE(c["actions"].size(), 2u) << c.dump(2);
  for (const auto& a : c["actions"]) {
    EXPECT_FALSE(a["applied"].get<bool>());
    EXPECT_GT(a["temp_C"].get<double>(), c["thermal"]["target_C"].get<double>());
    EXPECT_GT(a["power_W"].get<double>(), 0);
  }
  EXPECT_LT(c["actions"].back()["limit_W"].get<double>(), 700);  // what it would have reached
  // One decision a period (5 s), holds included.
  EXPECT_GE(c["decisions"].size(), 39u);
  EXPECT_GT(c["decisions"].size(), c["actions"].size());
  for (const auto& d : c["decisions"]) {
    EXPECT_TRUE(d["temp_C"].is_number());
    EXPECT_TRUE(d["power_W"].is_number());
  }
  EXPECT_NEAR(c["measurement"]["mean_limit_W"].get<double>(), 700, 1e-6);  // what the card had
  EXPECT_EQ(c["limit_after_W"].get<double>(), 700);
}

TEST_F(ControlCli, DryRunTextSaysWouldSet) {
  auto r = sb_.regime({"control", "--device", "sim:h200,ambient_C=30,cooling=2", "--workload",
                       "sim:resnet50", "--policy", "thermal", "--seconds", "120", "--dry-run"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dry run: the controller decides and logs what it would set; nothing is "
                       "set (--dry-run)"),
            std::string::npos)
      << r.out;
  // Every period's decision, holds included, with its temperature and power.
  EXPECT_NE(r.out.find("W  at 700 W: hold  ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("W  at 700 W: would set 665 W  ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("limit 700 W before, 700 W after (never changed)"), std::string::npos)
      << r.out;
}

// An evaluation must change the limit: under REGIME_READ_ONLY thermal refuses before any work.
TEST_F(ControlCli, ReadOnlyRefusesAnEvaluationBeforeAnyWork) {
  sb_.env["REGIME_READ_ONLY"] = "1";
  auto r = sb_.regime({"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--policy",
                       "thermal", "--seconds", "3000", "--evaluate"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--evaluate compares windows with and without the controller"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("REGIME_READ_ONLY"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

constexpr double kOriginalW = 280;  // deliberately not the default (300 W)

// The fake GPU heats 0.25 C per watt over 30 C ambient: 92 C at 250 W, over the 84 C target.
class ControlNvmlCli : public ControlCli {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        json::parse(R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-ctl","min_limit_W":100,)"
                    R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250,)"
                    R"("ambient_C":30,"temp_per_W":0.25}]})"),
        test::Sandbox::holding("GPU-fake-ctl", kOriginalW));
  }

  double limit_W() const { return sb_.fake_limit_W("GPU-fake-ctl"); }

  std::vector<std::string> args(const std::string& seconds, bool actuate = true,
                                const std::string& workload = "") const {
    std::vector<std::string> a = {"control",
                                  "--device",
                                  "nvml:0",
                                  "--policy",
                                  "thermal:period_s=0.2,dwell_s=0.6,step_W=40",
                                  "--seconds",
                                  seconds,
                                  "--sample-ms",
                                  "20",
                                  "--step-regex",
                                  "step"};
    if (actuate) a.push_back("--actuate");
    a.insert(a.end(), {"--", "sh", "-c",
                       workload.empty() ? "while true; do echo step; sleep 0.05; done" : workload});
    return a;
  }

  void interrupt_mid_run(int signo);
  void expect_dry_run(const std::string& why);
};

TEST_F(ControlNvmlCli, StaysInBoundsAtTheRateLimitAndRestoresTheOriginal) {
  auto a = args("5");
  a.insert(a.begin() + 1, "--json");
  json j = run_json(a);
  ASSERT_TRUE(j.contains("actions")) << j.dump(2);
  ASSERT_GE(j["actions"].size(), 2u) << j.dump(2);
  double prev_t = -1e9;
  for (const auto& x : j["actions"]) {
    EXPECT_GE(x["limit_W"].get<double>(), 100);
    EXPECT_LE(x["limit_W"].get<double>(), 300);
    EXPECT_LE(std::abs(x["limit_W"].get<double>() - x["old_limit_W"].get<double>()), 40 + 1e-6);
    EXPECT_GE(x["t_s"].get<double>() - prev_t, 0.6 - 1e-6);
    prev_t = x["t_s"].get<double>();
  }
  EXPECT_LT(j["actions"][0]["limit_W"].get<double>(), kOriginalW);  // it was too hot: lowered
  EXPECT_EQ(j["limit_after_W"].get<double>(), kOriginalW);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(ControlNvmlCli, AfterAFailedWorkloadTheOriginalLimitIsBack) {
  auto r =
      sb_.regime(args("30", true, "for i in $(seq 40); do echo step; sleep 0.05; done; exit 3"));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(limit_W(), kOriginalW);
}

// Starts a long run, waits until the controller has lowered the limit, then sends `signo`.
void ControlNvmlCli::interrupt_mid_run(int signo) {
  test::Child child = sb_.start(args("60"));
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    double l = limit_W();
    if (l > 0 && l < kOriginalW) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_LT(limit_W(), kOriginalW) << "the controller never lowered the limit: " << child.err();
  kill(child.pid, signo);
  EXPECT_EQ(child.wait(), 128 + signo) << child.err();
}

TEST_F(ControlNvmlCli, AfterSigtermTheOriginalLimitIsBack) {
  interrupt_mid_run(SIGTERM);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(ControlNvmlCli, AfterSigintTheOriginalLimitIsBack) {
  interrupt_mid_run(SIGINT);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(ControlNvmlCli, AfterKill9RestoreBringsTheOriginalBack) {
  interrupt_mid_run(SIGKILL);
  EXPECT_LT(limit_W(), kOriginalW);  // left as the controller set it
  auto r = sb_.regime({"restore"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(limit_W(), kOriginalW);
}

// Without --actuate a real GPU is controlled dry: every decision is logged with the temperature
// and power behind it, and the limit is never touched (polled all through the run), nor is a
// journal entry written.
void ControlNvmlCli::expect_dry_run(const std::string& why) {
  auto a = args("3", false);
  a.insert(a.begin() + 1, "--json");
  test::Child child = sb_.start(a);
  bool changed = false;
  int status = -1;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < end) {
    double l = limit_W();
    if (l > 0 && l != kOriginalW) changed = true;
    int st = 0;
    if (waitpid(child.pid, &st, WNOHANG) == child.pid) {
      status = test::decode_status(st);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (status == -1) {
    kill(child.pid, SIGKILL);
    child.wait();
  }
  ASSERT_EQ(status, 0) << child.err();
  EXPECT_FALSE(changed);
  EXPECT_EQ(limit_W(), kOriginalW);
  json j = json::parse(child.out(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << child.out() << child.err();
  EXPECT_TRUE(j["dry_run"].get<bool>());
  EXPECT_NE(j["dry_run_reason"].get<std::string>().find(why), std::string::npos)
      << j["dry_run_reason"];
  ASSERT_GE(j["actions"].size(), 2u) << j.dump(2);
  for (const auto& x : j["actions"]) {
    EXPECT_FALSE(x["applied"].get<bool>());
    EXPECT_TRUE(x["temp_C"].is_number());
    EXPECT_TRUE(x["power_W"].is_number());
    EXPECT_GE(x["limit_W"].get<double>(), 100);
  }
  EXPECT_GE(j["decisions"].size(), j["actions"].size());
  EXPECT_EQ(j["limit_after_W"].get<double>(), kOriginalW);
  // Nothing was journaled: there was nothing to undo.
  const fs::path journals = sb_.state_dir() / "power-limits";
  EXPECT_TRUE(!fs::exists(journals) || fs::is_empty(journals)) << journals;
}

TEST_F(ControlNvmlCli, WithoutActuateItRunsDryAndTheLimitIsUntouched) {
  expect_dry_run("--actuate");
}

TEST_F(ControlNvmlCli, ReadOnlyRunsDryAndTheLimitIsUntouched) {
  sb_.env["REGIME_READ_ONLY"] = "1";
  expect_dry_run("REGIME_READ_ONLY");
}

std::vector<std::string> evaluate_args() {
  return {"control",
          "--device",
          "nvml:0",
          "--policy",
          "thermal:period_s=0.1,dwell_s=0.3,step_W=40",
          "--seconds",
          "12",
          "--sample-ms",
          "20",
          "--step-regex",
          "step",
          "--evaluate",
          "--windows",
          "5",
          "--actuate",
          "--json",
          "--",
          "sh",
          "-c",
          "while true; do echo step; sleep 0.02; done"};
}

// SIGTERM in the middle of an evaluation, once the controller has lowered the limit: the
// original is back and the status says the signal.
TEST_F(ControlNvmlCli, AnEvaluationInterruptedRestoresTheOriginal) {
  test::Child child = sb_.start(evaluate_args());
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    double l = limit_W();
    if (l > 0 && l < kOriginalW) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_LT(limit_W(), kOriginalW) << "the controller never lowered the limit: " << child.err();
  kill(child.pid, SIGTERM);
  EXPECT_EQ(child.wait(), 128 + SIGTERM) << child.err();
  EXPECT_EQ(limit_W(), kOriginalW);
}

// An evaluation through the real NVML path: the arm switches and the controller's changes stay
// in [min, default] all through, and the original is back at the end and after SIGTERM.
TEST_F(ControlNvmlCli, AnEvaluationStaysInBoundsAndRestoresTheOriginal) {
  std::vector<std::string> a = evaluate_args();
  test::Child child = sb_.start(a);
  double lo = 1e9, hi = -1e9;
  int status = -1;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < end) {
    double l = limit_W();
    if (l > 0) {
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
    int st = 0;
    if (waitpid(child.pid, &st, WNOHANG) == child.pid) {
      status = test::decode_status(st);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (status == -1) {
    kill(child.pid, SIGKILL);
    child.wait();
  }
  ASSERT_EQ(status, 0) << child.err();
  EXPECT_GE(lo, 100);
  EXPECT_LE(hi, 300);
  EXPECT_LT(lo, kOriginalW);  // the controller did act
  EXPECT_EQ(limit_W(), kOriginalW);
  json j = json::parse(child.out(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << child.out() << child.err();
  EXPECT_TRUE(j["engaged"].get<bool>());
  EXPECT_EQ(j["evaluation"]["windows"].size(), 5u);
  for (const char* k : {"baseline", "controlled"})
    EXPECT_TRUE(j[k]["energy_per_step_J"].is_number()) << j.dump(2);
  double prev_t = -1e9;
  for (const auto& x : j["actions"]) {
    EXPECT_LE(std::abs(x["limit_W"].get<double>() - x["old_limit_W"].get<double>()), 40 + 1e-6);
    EXPECT_GE(x["t_s"].get<double>() - prev_t, 0.3 - 1e-6);
    prev_t = x["t_s"].get<double>();
  }
}

}  // namespace
}  // namespace regime
