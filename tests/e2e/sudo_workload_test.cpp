// End-to-end: `sudo regime ...` never trains as root. Regime runs as root with the variables sudo
// sets for a real unprivileged user made for the test (useradd), against the fake NVML; the
// workload reports who it runs as while the sweep holds a lower limit, and its step markers still
// reach regime through the socket it was given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "support/cli_run.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Runs the test from `dir`, as a user's shell would be somewhere the user can read.
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() {
    std::error_code ec;
    fs::current_path(old_, ec);
  }

 private:
  fs::path old_;
};

class SudoWorkloadE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: creates a user with useradd and runs regime as root the way "
                      "sudo starts it (SUDO_UID/SUDO_GID of that user)";
    std::string why;
    user_ = testing::TestUser::make(why);
    ASSERT_TRUE(user_) << why;
    // The user must read the fake GPU's state and the helper, as on a real machine.
    fs::permissions(dir_.path, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
    test::write_text(dir_.path / "config.json",
                     R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-sudo",)"
                     R"("min_limit_W":100,"max_limit_W":300,"default_limit_W":300,)"
                     R"("idle_W":60,"demand_W":250}]})");
    test::write_text(dir_.path / "state.json",
                     R"({"GPU-fake-sudo":{"limit_W":300.0,"energy_J":0.0,"capped_s":0.0,)"
                     R"("t_s":0.0}})");
    fs::copy(fs::path(REGIME_SOURCE_DIR) / "python" / "regime_step", dir_.path / "regime_step");
    env_ = user_->sudo_env();
    env_.insert({{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
                 {"FAKE_NVML_CONFIG", (dir_.path / "config.json").string()},
                 {"FAKE_NVML_STATE", (dir_.path / "state.json").string()},
                 {"REGIME_STATE_DIR", (dir_.path / "state").string()},
                 {"REGIME_SYSTEM_STATE_DIR", (dir_.path / "system-state").string()},
                 {"PYTHONPATH", dir_.path.string()}});
  }

  // The workload: a step line every 50 ms saying who runs it and the limit the GPU holds now.
  std::string reporter() const {
    return "while true; do echo \"step uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME "
           "user=$USER limit=$(sed -n 's/.*\"limit_W\": *\\([0-9.]*\\).*/\\1/p' " +
           (dir_.path / "state.json").string() + ")\"; sleep 0.05; done";
  }

  std::vector<std::string> sweep(const std::vector<std::string>& extra) const {
    std::vector<std::string> a = {"sweep", "--device",     "nvml:0",     "--caps",
                                  "250",   "--strategy",   "exhaustive", "--settle-s",
                                  "0.2",   "--probe-s",    "0.6",        "--warmup-steps",
                                  "2",     "--step-regex", "step",       "--actuate"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), {"--", "sh", "-c", reporter()});
    return a;
  }

  struct Seen {
    std::set<std::string> uids, gids, homes, users;
    std::set<gid_t> groups;
    std::set<std::string> limits;
    int lines_at_250 = 0;
  };
  static Seen seen(const std::string& out) {
    Seen s;
    std::regex line(
        R"(step uid=(\d+) gid=(\d+) groups=([\d ]+) home=(\S*) user=(\S*) limit=([\d.]*))");
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) {
      std::smatch m;
      if (!std::regex_search(l, m, line)) continue;
      s.uids.insert(m[1]);
      s.gids.insert(m[2]);
      std::istringstream g(m[3].str());
      for (gid_t id; g >> id;) s.groups.insert(id);
      s.homes.insert(m[4]);
      s.users.insert(m[5]);
      s.limits.insert(m[6]);
      if (std::stod(m[6].str().empty() ? "0" : m[6].str()) == 250) ++s.lines_at_250;
    }
    return s;
  }

  test::TempDir dir_;
  std::optional<testing::TestUser> user_;
  test::Env env_;
};

TEST_F(SudoWorkloadE2E, TheWorkloadRunsAsTheCallerWhileRegimeHoldsTheLimit) {
  ScopedCwd cwd(dir_.path);
  auto r = test::run(sweep({}), env_, dir_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  Seen s = seen(r.out);
  EXPECT_GT(s.lines_at_250, 0) << "no workload line while the 250 W cap was set:\n" << r.out;
  EXPECT_EQ(s.uids, std::set<std::string>{std::to_string(user_->uid())}) << r.out;
  EXPECT_EQ(s.gids, std::set<std::string>{std::to_string(user_->gid())}) << r.out;
  EXPECT_THAT(s.groups, ::testing::Contains(user_->extra_gid()));  // supplementary, as at login
  EXPECT_THAT(s.groups, ::testing::Not(::testing::Contains(0u)));
  EXPECT_EQ(s.homes, std::set<std::string>{user_->home().string()});
  EXPECT_EQ(s.users, std::set<std::string>{user_->name()});
  // Root did its part: the cap was set and the original limit is back.
  EXPECT_NE(r.out.find("restored the original limit 300 W"), std::string::npos) << r.out;
  const std::string state = test::read_text(dir_.path / "state.json");
  EXPECT_TRUE(std::regex_search(state, std::regex(R"("limit_W": *300[.,}])"))) << state;
}

TEST_F(SudoWorkloadE2E, StepMarkersFromTheCallersWorkloadReachRegime) {
  ScopedCwd cwd(dir_.path);
  test::write_text(dir_.path / "train.py",
                   "import os, sys, time, regime_step\n"
                   "assert os.getuid() == " +
                       std::to_string(user_->uid()) +
                       ", os.getuid()\n"
                       "for i in range(30):\n"
                       "    with regime_step.step():\n"
                       "        time.sleep(0.03)\n");
  auto r = test::run({"probe", "--device", "nvml:0", "--seconds", "30", "--json", "--", "python3",
                      (dir_.path / "train.py").string()},
                     env_, dir_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["step_markers"], 30) << r.out;
  EXPECT_EQ(j["exit_status"], 0);
}

TEST_F(SudoWorkloadE2E, ACommandTheCallerCannotRunIsRefusedNotRunAsRoot) {
  ScopedCwd cwd(dir_.path);
  // Executable by root alone: as the caller, exec is denied, and regime says so.
  test::write_text(dir_.path / "root-only.sh", "#!/bin/sh\necho ran as $(id -u)\n");
  fs::permissions(dir_.path / "root-only.sh", fs::perms::owner_all);
  auto r = test::run({"probe", "--device", "nvml:0", "--seconds", "5", "--",
                      (dir_.path / "root-only.sh").string()},
                     env_, dir_.path);
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out.find("ran as"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
}

TEST_F(SudoWorkloadE2E, WorkloadAsRootKeepsRootOnPurpose) {
  ScopedCwd cwd(dir_.path);
  for (bool keep : {false, true}) {
    std::vector<std::string> args = {"probe", "--device", "nvml:0", "--seconds", "5", "--no-steps"};
    if (keep) args.push_back("--workload-as-root");
    // Long enough to measure (a run under half a second names no regime and fails).
    args.insert(args.end(), {"--", "sh", "-c", "echo workload-uid=$(id -u); sleep 1"});
    auto r = test::run(args, env_, dir_.path);
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string uid = keep ? "0" : std::to_string(user_->uid());
    EXPECT_NE(r.out.find("workload-uid=" + uid + "\n"), std::string::npos) << keep << r.out;
  }
}

}  // namespace
}  // namespace regime
