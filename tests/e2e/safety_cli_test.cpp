// The command line's part in never leaving a GPU capped or a run hanging: numbers are checked
// before anything runs, an interrupted sweep says so in its exit status and stops its workload,
// no private directory outlives a killed run, and `regime restore` obeys REGIME_READ_ONLY.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/sandbox.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;

// The default is measured until its interval is tight (up to --probe-s 30) before the first cap is
// set; on a loaded machine the steps jitter and that can take the whole 30 s.
constexpr double kCapWait_s = 60;
using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;

class SafetyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        json::parse(R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-cli","min_limit_W":100,)"
                    R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250}]})"));
    fs::create_directories(sb_.path() / "tmp");
    sb_.env["TMPDIR"] = (sb_.path() / "tmp").string();
  }
  double limit_W() {
    RunResult r = sb_.regime({"limit", "show", "--device", "nvml:0", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out).at("current_limit_W").get<double>() : -1;
  }
  bool journaled() const { return sb_.journaled(); }
  // Private directories the runs left in TMPDIR.
  int temp_dirs() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(sb_.path() / "tmp"))
      if (e.path().filename().string().rfind("regime-", 0) == 0) ++n;
    return n;
  }
  // An actuating sweep whose workload writes its pid to `pid_file` and marks a step every 50 ms;
  // `on_signal` is the shell's reaction to SIGINT/SIGTERM/SIGHUP ("" = the default: it dies).
  std::vector<std::string> sweep(const std::string& mode, const std::string& on_signal) const {
    std::string script = "echo $$ > '" + (sb_.path() / "pid").string() + "'; " + on_signal +
                         " while true; do echo step; sleep 0.05; done";
    return {"sweep",     "--device",  "nvml:0",     "--mode",       mode,
            "--caps",    "250,200",   "--strategy", "exhaustive",   "--settle-s",
            "0.1",       "--probe-s", "30",         "--step-regex", "step",
            "--actuate", "--",        "sh",         "-c",           script};
  }
  bool process_gone(double timeout_s) const {
    pid_t pid = std::stoi(read_text(sb_.path() / "pid"));
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (::kill(pid, 0) != 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  bool wait_for_cap(double timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (fs::exists(sb_.path() / "pid") && limit_W() < 300) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  Sandbox sb_;
};

TEST_F(SafetyCli, EveryNumericOptionIsCheckedBeforeAnythingRuns) {
  const std::vector<std::vector<std::string>> bad = {
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds", "inf"},
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds", "nan"},
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds", "0"},
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds", "1e308"},
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--sample-ms", "0"},
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--warmup-s", "-1"},
      {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--energy-period-s", "nan"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--settle-s", "1e308"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--probe-s", "0"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--probe-s", "-1"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--probe-steps", "0"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--target-ci", "0"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--target-ci", "nan"},
      {"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--warmup-steps", "-3"},
      {"study", "--device", "sim:t4", "--workload", "sim:resnet50", "--probe-seconds", "inf"},
      {"study", "--device", "sim:t4", "--workload", "sim:resnet50", "--settle-s", "nan"},
      {"limit", "set", "--device", "sim:t4", "--watts", "nan"},
      {"limit", "set", "--device", "sim:t4", "--watts", "60", "--hold", "nan"},
      {"limit", "set", "--device", "sim:t4", "--watts", "60", "--hold", "-1"},
      {"limit", "set", "--device", "sim:t4", "--watts", "60", "--hold", "inf"},
      {"classify", "--trace", "x.trace.csv", "--gpu", "2000000000"},
      {"classify", "--trace", "x.trace.csv", "--limit-w", "-5"},
      {"devices", "--check", "sim:t4", "--seconds", "inf"},
  };
  for (const auto& args : bad) {
    auto t0 = std::chrono::steady_clock::now();
    RunResult r = sb_.regime(args);
    double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    EXPECT_EQ(r.status, 2) << cmd << ": " << r.err;
    EXPECT_THAT(r.err, AnyOf(HasSubstr("out of range: give"), HasSubstr("not a finite number"),
                             HasSubstr("is not a number")))
        << cmd << ": " << r.err;
    EXPECT_LT(took_s, 5) << cmd;
  }
}

TEST_F(SafetyCli, RestoreUnderReadOnlySaysWhatItWouldDoAndChangesNothing) {
  ASSERT_EQ(
      sb_.regime({"limit", "set", "--device", "nvml:0", "--watts", "150", "--actuate"}).status, 0);
  Env ro = sb_.env;
  ro["REGIME_READ_ONLY"] = "1";
  RunResult r = run({"restore"}, ro, sb_.path());
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_THAT(r.out, HasSubstr("would restore nvml:0 (GPU-fake-cli) to 300 W"));
  EXPECT_THAT(r.err, HasSubstr("REGIME_READ_ONLY is set: nothing was changed"));
  EXPECT_DOUBLE_EQ(limit_W(), 150);
  EXPECT_TRUE(journaled());
  r = run({"restore", "--json"}, ro, sb_.path());
  EXPECT_EQ(r.status, 4);
  json j = json::parse(r.out);
  EXPECT_TRUE(j.at("read_only").get<bool>());
  EXPECT_TRUE(j.at("outcomes")[0].at("would_restore").get<bool>());
  EXPECT_FALSE(j.at("outcomes")[0].at("ok").get<bool>());
  r = sb_.regime({"restore"});  // without it, the restore happens
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(), 300);
}

TEST_F(SafetyCli, AnInterruptedRestartSweepExitsBySignalAndRestores) {
  // The workload leaves cleanly (status 0) on the signal: the sweep still reports the signal.
  for (int sig : {SIGINT, SIGTERM}) {
    fs::remove(sb_.path() / "pid");
    Child c = sb_.start(sweep("restart", "trap 'exit 0' INT TERM HUP;"));
    ASSERT_TRUE(wait_for_cap(kCapWait_s)) << c.err();
    ::kill(c.pid, sig);
    EXPECT_EQ(c.wait(), 128 + sig) << c.err();
    EXPECT_DOUBLE_EQ(limit_W(), 300);
    EXPECT_FALSE(journaled());
  }
}

TEST_F(SafetyCli, SighupStopsTheWorkloadAndRestores) {
  for (const std::string mode : {"live", "restart"}) {
    fs::remove(sb_.path() / "pid");
    Child c = sb_.start(sweep(mode, ""));
    ASSERT_TRUE(wait_for_cap(kCapWait_s)) << c.err();
    ::kill(c.pid, SIGHUP);
    EXPECT_EQ(c.wait(), 128 + SIGHUP) << mode << ": " << c.err();
    EXPECT_TRUE(process_gone(5)) << mode << ": the workload outlived the hang-up";
    EXPECT_DOUBLE_EQ(limit_W(), 300) << mode;
    EXPECT_FALSE(journaled()) << mode;
  }
}

// A SIGPIPE sent by another process while the workload runs ends the sweep like any fatal signal:
// every limit back first, then exit 141 (the workload runner keeps the guard's handler).
TEST_F(SafetyCli, AKillPipeDuringAWorkloadRestoresAndExits141) {
  for (const std::string mode : {"live", "restart"}) {
    fs::remove(sb_.path() / "pid");
    Child c = sb_.start(sweep(mode, ""));
    ASSERT_TRUE(wait_for_cap(kCapWait_s)) << c.err();
    ::kill(c.pid, SIGPIPE);
    EXPECT_EQ(c.wait(), 128 + SIGPIPE) << mode << ": " << c.err();
    EXPECT_TRUE(process_gone(5)) << mode << ": the workload outlived the signal";
    EXPECT_DOUBLE_EQ(limit_W(), 300) << mode;
    EXPECT_FALSE(journaled()) << mode;
  }
}

TEST_F(SafetyCli, AWorkloadThatIgnoresTheInterruptIsStoppedAfterTheGrace) {
  Child c = sb_.start(sweep("live", "trap '' INT TERM HUP;"));
  ASSERT_TRUE(wait_for_cap(kCapWait_s)) << c.err();
  auto t0 = std::chrono::steady_clock::now();
  ::kill(c.pid, SIGINT);
  EXPECT_EQ(c.wait(), 128 + SIGINT) << c.err();
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took_s, 25) << "the sweep waited for a workload that ignores signals";
  EXPECT_TRUE(process_gone(5));
  EXPECT_DOUBLE_EQ(limit_W(), 300);
}

TEST_F(SafetyCli, NoPrivateDirectoryOutlivesAKilledRun) {
  // A signal that ends regime through the guard's watcher (no unwinding): the exit hook stops
  // the workload and removes the step socket's directory.
  Child c = sb_.start(sweep("live", ""));
  ASSERT_TRUE(wait_for_cap(kCapWait_s)) << c.err();
  EXPECT_EQ(temp_dirs(), 1);
  ::kill(c.pid, SIGQUIT);
  EXPECT_EQ(c.wait(), 128 + SIGQUIT) << c.err();
  EXPECT_TRUE(process_gone(5)) << "SIGQUIT left the workload running";
  EXPECT_EQ(temp_dirs(), 0);
  EXPECT_DOUBLE_EQ(limit_W(), 300);
  // SIGKILL: nothing runs, the directory stays; the next run removes it.
  fs::remove(sb_.path() / "pid");
  c = sb_.start({"probe", "--device", "nvml:0", "--seconds", "30", "--", "sh", "-c",
                 "echo $$ > '" + (sb_.path() / "pid").string() + "'; sleep 30"});
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!fs::exists(sb_.path() / "pid") && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(c.pid, SIGKILL);
  c.wait();
  ::kill(-std::stoi(read_text(sb_.path() / "pid")), SIGKILL);  // its group, left behind
  EXPECT_EQ(temp_dirs(), 1);
  RunResult r = sb_.regime({"probe", "--device", "nvml:0", "--seconds", "1", "--", "sleep", "2"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(temp_dirs(), 0) << "the dead run's directory was not cleaned up";
}

}  // namespace
}  // namespace regime::test
