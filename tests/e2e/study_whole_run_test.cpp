// `regime study -- CMD` runs the command to its end (docs/study.md, "The job runs to its end"),
// on the fake NVML: probe, sweep and the rest of the command on one run, the whole run's figures,
// the command's exit status, and the original limit back afterwards whatever ends the run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kOriginalW = 280;  // not the default: the original is what comes back

// A command of `steps` steps of 50 ms that prints a last line and exits with `status`.
std::vector<std::string> finite_command(int steps, int status) {
  return {"sh", "-c",
          "i=0; while [ $i -lt " + std::to_string(steps) +
              " ]; do echo step; i=$((i+1)); sleep 0.05; done; echo last-line-of-the-job; exit " +
              std::to_string(status)};
}

class StudyWholeRun : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        json::parse(
            R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-whole","min_limit_W":100,)"
            R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":350}]})"),
        test::Sandbox::holding("GPU-fake-whole", kOriginalW));
  }
  double limit_W() const { return sb_.fake_limit_W("GPU-fake-whole"); }
  std::vector<std::string> args(const std::vector<std::string>& flags,
                                const std::vector<std::string>& command) const {
    std::vector<std::string> a = {"study",           "--device", "nvml:0",       "--actuate",
                                  "--probe-seconds", "2",        "--settle-s",   "0.2",
                                  "--probe-s",       "0.5",      "--step-regex", "step"};
    a.insert(a.end(), flags.begin(), flags.end());
    a.push_back("--");
    a.insert(a.end(), command.begin(), command.end());
    return a;
  }
  json run_json(const std::vector<std::string>& command, int expect_status,
                const std::vector<std::string>& flags = {}) {
    std::vector<std::string> f = {"--json"};
    f.insert(f.end(), flags.begin(), flags.end());
    last_ = sb_.regime(args(f, command));
    EXPECT_EQ(last_.status, expect_status) << last_.err;
    json j = json::parse(last_.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << last_.out << last_.err;
    return j;
  }
  bool wait_for_limit_change(double timeout_s) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      const double w = limit_W();
      if (w > 0 && w != kOriginalW) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  test::Sandbox sb_;
  test::RunResult last_;
};

// Long enough (25 s at 50 ms a step) that the sweep decides before it ends even on a loaded
// machine, where every step and probe run slower.
constexpr int kLongJobSteps = 500;

TEST_F(StudyWholeRun, ACommandRunsToItsEndUnderTheDecisionAndTheLimitComesBack) {
  const json j = run_json(finite_command(kLongJobSteps, 3), 3);
  // Its last line came, and every one of its steps is counted.
  EXPECT_THAT(last_.err, HasSubstr("last-line-of-the-job"));
  const json& job = j["job"];
  ASSERT_TRUE(job.is_object()) << j.dump(2);
  EXPECT_EQ(job["steps"], kLongJobSteps);
  EXPECT_EQ(job["exit_status"], 3);
  EXPECT_EQ(job["reached"], "decision");
  EXPECT_EQ(job["probe"]["steps"].get<int>() + job["profiling"]["steps"].get<int>() +
                job["decided"]["steps"].get<int>(),
            kLongJobSteps);
  EXPECT_GT(job["energy_J"].get<double>(), 0);
  EXPECT_GT(job["decided"]["seconds"].get<double>(), 1);
  ASSERT_TRUE(j["decision"].is_object());
  if (!j["decision"]["keep_default"].get<bool>()) {
    EXPECT_EQ(job["cap_W"], j["decision"]["cap_W"]);
  }
  ASSERT_TRUE(job["saved_J"].is_number()) << job.dump(2);
  EXPECT_LE(job["saved_ci_J"][0].get<double>(), job["saved_J"].get<double>());
  EXPECT_GE(job["saved_ci_J"][1].get<double>(), job["saved_J"].get<double>());
  EXPECT_THAT(j["after"].get<std::string>(), HasSubstr("restored the original limit 280 W"));
  EXPECT_EQ(limit_W(), kOriginalW);
  EXPECT_FALSE(sb_.journaled());
}

TEST_F(StudyWholeRun, WithApplyTheDecisionStaysAndTheJournalHoldsTheOriginal) {
  const json j = run_json(finite_command(kLongJobSteps, 0), 0, {"--apply"});
  ASSERT_TRUE(j["decision"].is_object()) << j.dump(2);
  ASSERT_FALSE(j["decision"]["keep_default"].get<bool>()) << j.dump(2);
  EXPECT_EQ(limit_W(), j["decision"]["cap_W"].get<double>());
  EXPECT_TRUE(sb_.journaled());
  EXPECT_EQ(sb_.regime({"restore"}).status, 0);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(StudyWholeRun, ACommandEndingDuringTheProbeIsAFinishedJob) {
  const json j = run_json(finite_command(12, 0), 0);
  EXPECT_EQ(j["job"]["steps"], 12);
  EXPECT_EQ(j["job"]["reached"], "probe");
  EXPECT_FALSE(j["job"]["unfinished"].is_null());
  EXPECT_TRUE(j["sweep"].is_null());
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(StudyWholeRun, ACommandEndingDuringTheSweepRestoresAndSaysHowFarItGot) {
  // 2 s of probe, then the sweep's first caps: it ends before the search does.
  const json j = run_json(finite_command(70, 5), 5);
  EXPECT_EQ(j["job"]["steps"], 70);
  EXPECT_EQ(j["job"]["reached"], "sweep") << j["job"].dump(2);
  EXPECT_THAT(j["job"]["unfinished"].get<std::string>(), HasSubstr("during the sweep"));
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(StudyWholeRun, StopAfterDecisionStopsTheCommandAndSaysSo) {
  const test::RunResult r = sb_.regime(
      args({"--stop-after-decision"}, {"sh", "-c", "while true; do echo step; sleep 0.05; done"}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--stop-after-decision: the command was stopped"));
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(StudyWholeRun, StopAfterDecisionSaysStoppedOnlyWhenTheCommandWasStopped) {
  // Read-only: no sweep, so the probe's run is the command's only one, and it ends first.
  sb_.env["REGIME_READ_ONLY"] = "1";
  const json ended = run_json(finite_command(20, 0), 0, {"--stop-after-decision"});
  EXPECT_THAT(last_.err, HasSubstr("last-line-of-the-job"));
  EXPECT_FALSE(ended["stopped_command"].get<bool>()) << ended.dump(2);
  const test::RunResult text = sb_.regime(args({"--stop-after-decision"}, finite_command(20, 0)));
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("the command ended on its own during the probe"));
  EXPECT_THAT(text.out, Not(HasSubstr("the command was stopped")));
  // The same study of a command that outlasts the probe stops it.
  const json stopped = run_json({"sh", "-c", "while true; do echo step; sleep 0.05; done"}, 0,
                                {"--stop-after-decision"});
  EXPECT_TRUE(stopped["stopped_command"].get<bool>()) << stopped.dump(2);
  // A run to its end stopped nothing either.
  sb_.env.erase("REGIME_READ_ONLY");
  const json whole = run_json(finite_command(12, 0), 0);
  EXPECT_FALSE(whole["stopped_command"].get<bool>()) << whole.dump(2);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(StudyWholeRun, ATerminatedOrKilledWholeRunLeavesTheOriginalLimit) {
  for (const int signo : {SIGTERM, SIGINT, SIGKILL}) {
    test::Child child = sb_.start(args({}, finite_command(400, 0)));
    ASSERT_TRUE(wait_for_limit_change(20)) << "the sweep never set a cap: " << child.err();
    // Into the sweep or the rest under the decision.
    std::this_thread::sleep_for(std::chrono::milliseconds(signo == SIGINT ? 600 : 4000));
    ::kill(child.pid, signo);
    const int status = child.wait();
    if (signo == SIGKILL) {
      EXPECT_EQ(status, 128 + SIGKILL);
      EXPECT_EQ(sb_.regime({"restore"}).status, 0);
    } else {
      EXPECT_EQ(status, 128 + signo) << child.err();
    }
    EXPECT_EQ(limit_W(), kOriginalW) << "after signal " << signo;
  }
}

}  // namespace
}  // namespace regime
