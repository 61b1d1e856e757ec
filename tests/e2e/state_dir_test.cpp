// A state folder that cannot be found, made or trusted (HOME unset, HOME=/nonexistent, HOME=/,
// a REGIME_STATE_DIR that is a file or under /proc): --help and --version still work, a command
// that needs no state still runs, and one that needs it fails with one line naming the folder and
// a proper exit status, never an abort (134) or an internal error (70).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "support/cli_run.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uid_t kNobody = 65534;

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// `regime args...` as an unprivileged user (nobody, through setpriv, when this runs as root) with
// no state-folder variable but `home` as HOME (unset when nullopt), and `extra` set.
RunResult run_unprivileged(const std::vector<std::string>& args,
                           const std::optional<std::string>& home, const Env& extra = {}) {
  TempDir dir;
  const fs::path out = dir.path / "out", err = dir.path / "err";
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::chdir("/");
    for (const char* v : {"HOME", "XDG_STATE_HOME", "REGIME_STATE_DIR", "REGIME_SYSTEM_STATE_DIR"})
      ::unsetenv(v);
    if (home) ::setenv("HOME", home->c_str(), 1);
    for (const auto& [k, v] : extra) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<std::string> argv_s;
    if (::geteuid() == 0)
      argv_s = {"/usr/bin/setpriv", "--reuid=" + std::to_string(kNobody),
                "--regid=" + std::to_string(kNobody), "--clear-groups"};
    argv_s.push_back(REGIME_BINARY);
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {decode_status(st), read_text(out), read_text(err)};
}

struct Home {
  const char* what;
  std::optional<std::string> home;
  const char* says;  // what the one-line failure names: the variable to set, or the folder
};
const Home kHomes[] = {{"HOME unset", std::nullopt, "set REGIME_STATE_DIR or HOME"},
                       {"HOME=/nonexistent", "/nonexistent", "/nonexistent"},
                       {"HOME=/", "/", "/.local"}};

TEST(StateDir, HelpAndVersionWorkWithoutAStateFolder) {
  for (const auto& h : kHomes) {
    RunResult help = run_unprivileged({"--help"}, h.home);
    EXPECT_EQ(help.status, 0) << h.what << ": " << help.err;
    EXPECT_THAT(help.out, HasSubstr("regime-first GPU power management")) << h.what;
    RunResult version = run_unprivileged({"--version"}, h.home);
    EXPECT_EQ(version.status, 0) << h.what << ": " << version.err;
    EXPECT_THAT(version.out, StartsWith("regime ")) << h.what;
    // Every command's own help: `job` once read the state folder when it was added.
    for (const char* cmd : {"job", "probe", "sweep", "runs", "control", "limit"}) {
      RunResult r = run_unprivileged({cmd, "--help"}, h.home);
      EXPECT_EQ(r.status, 0) << h.what << ", " << cmd << " --help: " << r.err;
    }
  }
}

TEST(StateDir, ACommandNeedingNoStateRunsWithoutOne) {
  for (const auto& h : kHomes) {
    RunResult r = run_unprivileged({"limit", "show", "--device", "sim:t4"}, h.home);
    EXPECT_EQ(r.status, 0) << h.what << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("current limit")) << h.what;
  }
}

TEST(StateDir, ACommandNeedingStateFailsOnOneLineNamingTheFolderOrWhatToSet) {
  for (const auto& h : kHomes) {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"runs"},
             {"job", "show", "--job", "7"},
             {"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds", "2"}}) {
      RunResult r = run_unprivileged(args, h.home);
      const std::string cmd = h.what + std::string(", ") + args.front();
      EXPECT_NE(r.status, 0) << cmd;
      EXPECT_NE(r.status, 134) << cmd << ": aborted: " << r.err;
      EXPECT_NE(r.status, 70) << cmd << ": internal error: " << r.err;
      EXPECT_TRUE(r.status == 4 || r.status == 7)
          << cmd << ": status " << r.status << ": " << r.err;
      EXPECT_THAT(r.err, StartsWith("regime: ")) << cmd;
      EXPECT_EQ(lines(r.err), 1u) << cmd << ": " << r.err;
      EXPECT_THAT(r.err, HasSubstr(h.says)) << cmd << ": " << r.err;
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("terminate called"))) << cmd;
    }
  }
}

TEST(StateDir, AStateDirThatCannotBeMadeFailsCleanlyAndHelpStillWorks) {
  TempDir dir;
  write_text(dir.path / "a-file", "not a folder\n");
  for (const std::string& bad :
       {std::string("/proc/regime-state"), (dir.path / "a-file").string()}) {
    const Env env = {{"REGIME_STATE_DIR", bad}};
    EXPECT_EQ(run({"--help"}, env, dir.path).status, 0) << bad;
    EXPECT_EQ(run({"job", "--help"}, env, dir.path).status, 0) << bad;
    RunResult r = run({"runs"}, env, dir.path);
    EXPECT_TRUE(r.status == 4 || r.status == 7) << bad << ": status " << r.status << ": " << r.err;
    EXPECT_THAT(r.err, StartsWith("regime: ")) << bad;
    EXPECT_THAT(r.err, HasSubstr(bad)) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
}

}  // namespace
}  // namespace regime::test
