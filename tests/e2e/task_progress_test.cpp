// End-to-end: the progress line of sweeps and control runs on a pseudo-terminal: probes counted
// against the most there can be, elapsed and remaining time, each probe's line printed above the
// bar; coloured unless NO_COLOR is set; never with --quiet, and --json on stdout stays one clean
// JSON document while the line is drawn.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/pty_run.hpp"
#include "support/sandbox.hpp"

namespace regime {
namespace {

using test::PtyRun;
using test::run_with_terminal_stderr;

class TaskProgressCli : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        nlohmann::json::parse(R"({"gpus": [{"name": "NVIDIA Fake GPU", "uuid": "GPU-fake-progress",
                                    "min_limit_W": 100, "max_limit_W": 300, "default_limit_W": 300,
                                    "idle_W": 60, "demand_W": 250}]})"));
    sb_.env["TERM"] = "xterm";
  }
  // Three caps, exhaustively, each measured for 1.5 s of a workload that steps every 50 ms.
  std::vector<std::string> sweep(std::vector<std::string> extra) {
    std::vector<std::string> a = {
        "sweep",       "--device",   "nvml:0",     "--caps",
        "300,250,200", "--strategy", "exhaustive", "--settle-s",
        "0.2",         "--probe-s",  "1.5",        "--step-regex",
        "step",        "--actuate",  "--db",       (sb_.path() / "runs.sqlite").string()};
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), {"--", "sh", "-c", "while true; do echo step; sleep 0.05; done"});
    return a;
  }
  test::Sandbox sb_;
};

// The probe counts drawn, in order.
std::vector<int> counts(const std::string& terminal, const std::string& label) {
  const std::regex line("\\r" + label + R"( (\d)/4 probes \[)");
  std::vector<int> out;
  for (auto it = std::sregex_iterator(terminal.begin(), terminal.end(), line);
       it != std::sregex_iterator(); ++it)
    out.push_back(std::stoi((*it)[1].str()));
  return out;
}

TEST_F(TaskProgressCli, ASweepCountsItsProbesWithTimeLeftAndPrintsEachAboveTheBar) {
  const PtyRun r = run_with_terminal_stderr(sweep({}), sb_.env);
  ASSERT_EQ(r.status, 0) << r.terminal;
  const std::vector<int> seen = counts(r.terminal, "sweep");
  ASSERT_GE(seen.size(), 3u) << r.terminal;
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end())) << r.terminal;
  EXPECT_GE(seen.back(), 2) << r.terminal;
  EXPECT_TRUE(std::regex_search(r.terminal, std::regex(R"(\d:\d\d elapsed  up to \d:\d\d left)")))
      << r.terminal;
  // The bar is coloured on a terminal, and a probe's line starts on a cleared line.
  EXPECT_NE(r.terminal.find("[\x1b[32m#"), std::string::npos) << r.terminal;
  EXPECT_NE(r.terminal.find("\r\x1b[Kprobe 250.0 W:"), std::string::npos) << r.terminal;
  EXPECT_NE(r.out.find("decision"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("probes ["), std::string::npos) << r.out;
}

TEST_F(TaskProgressCli, NoColorAndJsonKeepTheLineUncolouredAndStdoutClean) {
  sb_.env["NO_COLOR"] = "1";
  const PtyRun r = run_with_terminal_stderr(sweep({"--json"}), sb_.env);
  ASSERT_EQ(r.status, 0) << r.terminal;
  EXPECT_FALSE(counts(r.terminal, "sweep").empty()) << r.terminal;
  EXPECT_EQ(r.terminal.find("\x1b[32m"), std::string::npos) << r.terminal;
  EXPECT_EQ(r.terminal.find("probe 250.0 W:"), std::string::npos) << "no probe lines with --json";
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("decision")) << r.out;
}

TEST_F(TaskProgressCli, QuietDrawsNothing) {
  const PtyRun r = run_with_terminal_stderr(sweep({"--json", "--quiet"}), sb_.env);
  ASSERT_EQ(r.status, 0) << r.terminal;
  EXPECT_TRUE(counts(r.terminal, "sweep").empty()) << r.terminal;
  EXPECT_EQ(r.terminal.find("\x1b[K"), std::string::npos) << r.terminal;
}

TEST_F(TaskProgressCli, AControlRunOnARealGpuIsABarByTime) {
  const PtyRun r =
      run_with_terminal_stderr({"control", "--device", "nvml:0", "--policy", "thermal", "--actuate",
                                "--seconds", "4", "--sample-ms", "100", "--json", "--", "sh", "-c",
                                "while true; do echo step; sleep 0.05; done"},
                               sb_.env);
  ASSERT_EQ(r.status, 0) << r.terminal;
  EXPECT_TRUE(std::regex_search(
      r.terminal, std::regex(R"(\rcontrol 0:0[1-4]/0:04 \[.*\] +\d+%  0:0\d elapsed  0:0\d left)")))
      << r.terminal;
  EXPECT_TRUE(nlohmann::json::parse(r.out).is_object()) << r.out;  // stdout: the JSON alone
}

}  // namespace
}  // namespace regime
