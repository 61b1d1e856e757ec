// End-to-end: the probe's progress line appears on stderr when stderr is a pseudo-terminal (once
// a second, cleared at the end), never with --quiet, never into a pipe, and --json on stdout stays
// one clean JSON document while the line is drawn.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/cli_run.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using test::Env;
using test::TempDir;

struct PtyRun {
  int status = -1;
  std::string out;       // stdout: a pipe
  std::string terminal;  // stderr: the pseudo-terminal
};

// Runs regime with stdout on a pipe and stderr on a pseudo-terminal 100 columns wide.
PtyRun run_with_terminal_stderr(const std::vector<std::string>& args, const Env& env) {
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_col = 100;
  ws.ws_row = 30;
  if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0) throw std::runtime_error("openpty");
  int out_pipe[2];
  if (::pipe(out_pipe) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::dup2(out_pipe[1], 1);
    ::dup2(slave, 2);
    ::close(master);
    ::close(out_pipe[0]);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::string bin = REGIME_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(slave);
  ::close(out_pipe[1]);
  PtyRun r;
  pollfd fds[2] = {{master, POLLIN, 0}, {out_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0 && ::poll(fds, 2, 30000) > 0) {
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {  // EIO on the master once the child has closed the terminal
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? r.terminal : r.out).append(buf, static_cast<size_t>(n));
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.status = test::decode_status(st);
  return r;
}

class ProbeProgressCli : public ::testing::Test {
 protected:
  void SetUp() override {
    test::write_text(dir_.path / "fake.json",
                     R"({"gpus": [{"name": "NVIDIA H200", "min_limit_W": 200, "max_limit_W": 700,
                        "default_limit_W": 700, "idle_W": 80, "demand_W": 600}]})");
    env_ = {{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
            {"FAKE_NVML_CONFIG", (dir_.path / "fake.json").string()},
            {"FAKE_NVML_STATE", (dir_.path / "fake_state.json").string()},
            {"REGIME_STATE_DIR", (dir_.path / "state").string()},
            {"REGIME_READ_ONLY", "1"},
            {"TERM", "xterm"}};
  }
  // A 4 s probe of `sleep 10` (stopped at the limit), figures per second.
  std::vector<std::string> probe(std::vector<std::string> extra) {
    std::vector<std::string> args{"probe", "--device", "nvml:0", "--seconds", "4", "--no-steps"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sleep", "10"});
    return args;
  }
  TempDir dir_;
  Env env_;
};

TEST_F(ProbeProgressCli, DrawsOnATerminalOnceASecondAndClearsTheLine) {
  const PtyRun r = run_with_terminal_stderr(probe({"--json"}), env_);
  ASSERT_EQ(r.status, 0) << r.terminal;
  const std::regex line(
      R"(\rprobe (\d)/4 s \[[#.]+\] +\d+%  \d s left  0 steps  (?:\d+|-) W  (?:\d+|-) C\x1b\[K)");
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
  const PtyRun r = run_with_terminal_stderr(probe({"--json", "--quiet"}), env_);
  ASSERT_EQ(r.status, 0) << r.terminal;
  EXPECT_EQ(r.terminal.find("/4 s"), std::string::npos) << r.terminal;
}

TEST_F(ProbeProgressCli, APipeGetsNoProgress) {
  const test::RunResult r = test::run(probe({}), env_, dir_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("/4 s"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("regime"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace regime
