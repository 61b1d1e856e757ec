// End-to-end: `regime export` from the command line: it serves /metrics until SIGTERM and exits 0,
// stops by itself after --seconds, refuses bad options with one line, and says so when its port is
// taken. (Its metrics under a real Prometheus server: tests/prometheus.)
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <thread>

#include "support/cli_run.hpp"

namespace regime {
namespace {

using test::TempDir;

// The URL the exporter prints once it serves, waiting up to 20 s for it.
std::string wait_for_url(const test::Child& c) {
  const std::regex url(R"(serving \d+ GPU\(s\) at http://127\.0\.0\.1:(\d+)/metrics)");
  for (int i = 0; i < 1000; ++i) {
    std::smatch m;
    const std::string out = c.out();
    if (std::regex_search(out, m, url)) return m[1].str();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

TEST(ExportCli, ServesUntilSigtermAndExitsCleanly) {
  TempDir dir;
  test::Child c = test::spawn({"export", "--device", "sim:h200", "--device", "sim:t4", "--listen",
                               "127.0.0.1:0", "--period", "0.2"},
                              {}, dir.path);
  const std::string port = wait_for_url(c);
  ASSERT_FALSE(port.empty()) << c.out() << c.err();
  EXPECT_NE(c.out().find("sim:h200"), std::string::npos) << c.out();
  EXPECT_NE(c.out().find("sim:t4"), std::string::npos) << c.out();
  // A second exporter on the same port is told it is taken (exit 7, Io).
  const test::RunResult taken = test::run(
      {"export", "--device", "sim:h200", "--listen", "127.0.0.1:" + port, "--seconds", "1"}, {},
      dir.path);
  EXPECT_EQ(taken.status, 7) << taken.err;
  EXPECT_NE(taken.err.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << taken.err;
  ::kill(c.pid, SIGTERM);
  EXPECT_EQ(c.wait(), 0) << c.err();
  EXPECT_NE(c.out().find("stopped after"), std::string::npos) << c.out();
  EXPECT_NE(c.out().find("Terminated"), std::string::npos) << c.out();
}

TEST(ExportCli, StopsAfterSeconds) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const test::RunResult r =
      test::run({"export", "--device", "sim:h200", "--listen", "127.0.0.1:0", "--seconds", "1.5"},
                {}, dir.path);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GE(took_s, 1.5);
  EXPECT_LT(took_s, 10);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(stopped after [23] round\(s\)\n)"))) << r.out;
}

TEST(ExportCli, BadOptionsAreOneLine) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"export"}, "--device is required"},
      {{"export", "--device", "sim:h200", "--listen", "9400"}, "--listen '9400': no port"},
      {{"export", "--device", "sim:h200", "--listen", "127.0.0.1:70000"}, "0 to 65535"},
      {{"export", "--device", "sim:h200", "--period", "0"}, "--period"},
      {{"export", "--device", "sim:nope"}, "nope"},
      {{"export", "--device", "sim:h200", "--workload", "sim:nosuch"}, "nosuch"},
  };
  for (const auto& c : cases) {
    const test::RunResult r = test::run(c.args, {}, dir.path);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace regime
