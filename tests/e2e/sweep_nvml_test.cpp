// regime sweep against the fake NVML (the real NVML code path): the original limit comes back
// after a sweep, a failed workload, SIGINT and SIGTERM; `regime restore` brings it back after
// kill -9; without --actuate nothing is changed and the user is told why.
#include <gtest/gtest.h>
#include <signal.h>

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

constexpr double kOriginalW = 280;  // deliberately not the default (300 W)

class SweepNvmlCli : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        json::parse(
            R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-plan","min_limit_W":100,)"
            R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250}]})"),
        test::Sandbox::holding("GPU-fake-plan", kOriginalW));
  }

  double limit_W() const { return sb_.fake_limit_W("GPU-fake-plan"); }

  // A sweep whose workload prints a step every 50 ms; probes last `probe_s` seconds.
  std::vector<std::string> sweep_args(const std::string& probe_s, bool actuate = true,
                                      const std::string& workload = "") const {
    std::vector<std::string> a = {"sweep",       "--device",       "nvml:0",     "--caps",
                                  "300,250,200", "--strategy",     "exhaustive", "--settle-s",
                                  "0.2",         "--warmup-steps", "2",          "--probe-s",
                                  probe_s,       "--step-regex",   "step"};
    if (actuate) a.push_back("--actuate");
    a.insert(a.end(), {"--", "sh", "-c",
                       workload.empty() ? "while true; do echo step; sleep 0.05; done" : workload});
    return a;
  }

  // Waits until the fake GPU's limit reads `watts` or `timeout_s` passes.
  bool wait_for_limit(double watts, double timeout_s) const {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (limit_W() == watts) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void interrupt_mid_sweep(int signo, int expect_exit) {
    test::Child child = sb_.start(sweep_args("30"));
    ASSERT_TRUE(wait_for_limit(300, 20)) << "the sweep never set its first cap: " << child.err();
    // Let the probe's window run a little, then interrupt it mid-probe.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(child.pid, signo);
    EXPECT_EQ(child.wait(), expect_exit) << child.err();
  }

  test::Sandbox sb_;
};

TEST_F(SweepNvmlCli, AfterASweepTheOriginalLimitIsBack) {
  auto r = sb_.regime(sweep_args("0.6"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("decision: 200 W"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("restored the original limit 280 W"), std::string::npos) << r.out;
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(SweepNvmlCli, AfterAFailedWorkloadTheOriginalLimitIsBack) {
  auto r = sb_.regime(sweep_args(
      "0.6", true,
      "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo step; sleep 0.05; done; exit 3"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("exit status 3"), std::string::npos) << r.err;
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(SweepNvmlCli, AfterSigintTheOriginalLimitIsBack) {
  interrupt_mid_sweep(SIGINT, 128 + SIGINT);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(SweepNvmlCli, AfterSigtermTheOriginalLimitIsBack) {
  interrupt_mid_sweep(SIGTERM, 128 + SIGTERM);
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(SweepNvmlCli, AfterKill9RestoreBringsTheOriginalBack) {
  interrupt_mid_sweep(SIGKILL, 128 + SIGKILL);
  EXPECT_EQ(limit_W(), 300);  // left as the sweep set it
  auto r = sb_.regime({"restore"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(SweepNvmlCli, WithoutActuateNothingChangesAndTheUserIsTold) {
  auto r = sb_.regime(sweep_args("0.6", false));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--actuate"), std::string::npos) << r.err;
  EXPECT_EQ(limit_W(), kOriginalW);
}

TEST_F(SweepNvmlCli, ApplyLeavesTheChosenCapAndRestoreUndoesIt) {
  auto args = sweep_args("0.6");
  args.insert(args.begin() + 1, "--apply");
  auto r = sb_.regime(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(limit_W(), 200);
  EXPECT_NE(r.out.find("applied: 200 W"), std::string::npos) << r.out;
  auto rr = sb_.regime({"restore"});
  EXPECT_EQ(rr.status, 0) << rr.err;
  EXPECT_EQ(limit_W(), kOriginalW);
}

}  // namespace
}  // namespace regime
