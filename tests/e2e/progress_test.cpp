// End-to-end: the probe's progress line appears on stderr when stderr is a pseudo-terminal (once
// a second, cleared at the end), never with --quiet, never into a pipe, and --json on stdout stays
// one clean JSON document while the line is drawn.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/pty_run.hpp"
#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using test::Env;

using test::PtyRun;
using test::run_with_terminal_stderr;

class ProbeProgressCli : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(nlohmann::json::parse(
        R"({"gpus": [{"name": "NVIDIA H200", "min_limit_W": 200, "max_limit_W": 700,
                                    "default_limit_W": 700, "idle_W": 80, "demand_W": 600}]})"));
    sb_.env["REGIME_READ_ONLY"] = "1";
    sb_.env["TERM"] = "xterm";
  }
  // A 4 s probe of `sleep 10` (stopped at the limit), figures per second.
  std::vector<std::string> probe(std::vector<std::string> extra) {
    std::vector<std::string> args{"probe", "--device", "nvml:0", "--seconds", "4", "--no-steps"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sleep", "10"});
    return args;
  }
  test::Sandbox sb_;
};

TEST_F(ProbeProgressCli, DrawsOnATerminalOnceASecondAndClearsTheLine) {
  const PtyRun r = run_with_terminal_stderr(probe({"--json"}), sb_.env);
  ASSERT_EQ(r.status, 0) << r.terminal;
  const std::regex line(
      R"(\rprobe 0:0(\d)/0:04 \[(?:\x1b\[32m)?#*(?:\x1b\[0m)?\.*\] +\d+%  0:0\d elapsed  0:0\d left  )"
      R"(0 steps  (?:\d+|-) W  (?:\d+|-) C\x1b\[K)");
  std::vector<int> elapsed;
  for (auto it = std::sregex_iterator(r.terminal.begin(), r.terminal.end(), line);
       it != std::sregex_iterator(); ++it)
    elapsed.push_back(std::stoi((*it)[1].str()));
  // 4 s of run drawn at most once a second: 3 to 5 lines, elapsed rising.
  EXPECT_GE(elapsed.size(), 3u) << r.terminal;
  EXPECT_LE(elapsed.size(), 5u) << r.terminal;
  EXPECT_TRUE(std::is_sorted(elapsed.begin(), elapsed.end())) << r.terminal;
  EXPECT_NE(r.terminal.find("\r\x1b[K"), std::string::npos) << "the line is cleared at the end";
  // stdout is the JSON document alone.
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("regime")) << r.out;
  EXPECT_EQ(r.out.find("probe "), std::string::npos);
}

TEST_F(ProbeProgressCli, QuietDrawsNothing) {
  const PtyRun r = run_with_terminal_stderr(probe({"--json", "--quiet"}), sb_.env);
  ASSERT_EQ(r.status, 0) << r.terminal;
  EXPECT_EQ(r.terminal.find("/0:04"), std::string::npos) << r.terminal;
}

TEST_F(ProbeProgressCli, APipeGetsNoProgress) {
  const test::RunResult r = sb_.regime(probe({}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("/0:04"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("regime"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace regime
