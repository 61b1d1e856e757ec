#include "run/workload_user.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(SudoCaller, DropsOnlyWhenRootThroughSudo) {
  auto c = sudo_caller(0, "1000", "1001", false);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->uid, 1000u);
  EXPECT_EQ(c->gid, 1001u);
  EXPECT_FALSE(sudo_caller(1000, "1000", "1000", false));  // not root: nothing to drop
  EXPECT_FALSE(sudo_caller(0, nullptr, "1000", false));    // root, but not through sudo
  EXPECT_FALSE(sudo_caller(0, "1000", nullptr, false));
  EXPECT_FALSE(sudo_caller(0, "0", "0", false));       // root ran sudo: already root's
  EXPECT_FALSE(sudo_caller(0, "1000", "1000", true));  // --workload-as-root
}

TEST(SudoCaller, RefusesAValueThatIsNoId) {
  for (const char* bad : {"", "abc", "-1", "12x", "4294967295", "99999999999"}) {
    try {
      sudo_caller(0, bad, "1000", false);
      ADD_FAILURE() << "accepted SUDO_UID='" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("--workload-as-root"));
    }
  }
  EXPECT_THROW(sudo_caller(0, "1000", "x", false), Error);
}

WorkloadUser alice() {
  WorkloadUser u;
  u.uid = 1000;
  u.gid = 1000;
  u.name = "alice";
  u.home = "/home/alice";
  u.shell = "/bin/bash";
  return u;
}

TEST(EnvironmentFor, IsTheUsersAndKeepsTheRest) {
  const std::vector<std::string> env = {"HOME=/root",
                                        "USER=root",
                                        "LOGNAME=root",
                                        "SHELL=/bin/zsh",
                                        "PATH=/usr/local/sbin:/usr/bin",
                                        "XDG_RUNTIME_DIR=/run/user/0",
                                        "SUDO_UID=1000",
                                        "REGIME_STEP_SOCKET=/tmp/regime-x/steps.sock",
                                        "CUDA_VISIBLE_DEVICES=0",
                                        "HOMEWARD=kept"};
  auto out = environment_for(alice(), env, true);
  EXPECT_THAT(out, Contains("HOME=/home/alice"));
  EXPECT_THAT(out, Contains("USER=alice"));
  EXPECT_THAT(out, Contains("LOGNAME=alice"));
  EXPECT_THAT(out, Contains("SHELL=/bin/bash"));
  EXPECT_THAT(out, Contains("PATH=/usr/local/sbin:/usr/bin"));
  EXPECT_THAT(out, Contains("XDG_RUNTIME_DIR=/run/user/1000"));
  EXPECT_THAT(out, Contains("REGIME_STEP_SOCKET=/tmp/regime-x/steps.sock"));
  EXPECT_THAT(out, Contains("CUDA_VISIBLE_DEVICES=0"));
  EXPECT_THAT(out, Contains("SUDO_UID=1000"));
  EXPECT_THAT(out, Contains("HOMEWARD=kept"));
  EXPECT_THAT(out, Not(Contains("HOME=/root")));
  EXPECT_THAT(out, Not(Contains("XDG_RUNTIME_DIR=/run/user/0")));
  EXPECT_EQ(std::count_if(out.begin(), out.end(),
                          [](const std::string& e) { return e.rfind("HOME=", 0) == 0; }),
            1);
  EXPECT_THAT(environment_for(alice(), env, false),
              Not(Contains(::testing::StartsWith("XDG_RUNTIME_DIR="))));
}

TEST(EnvironmentFor, PathKeepsOnlyAbsoluteEntries) {
  auto path_of = [](const std::vector<std::string>& env) {
    for (const auto& e : environment_for(alice(), env, false))
      if (e.rfind("PATH=", 0) == 0) return e.substr(5);
    return std::string("(none)");
  };
  EXPECT_EQ(path_of({"PATH=::/usr/bin:.:bin:/sbin:"}), "/usr/bin:/sbin");
  EXPECT_EQ(path_of({"PATH=."}), "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(path_of({}), "/usr/local/bin:/usr/bin:/bin");
}

TEST(WorkloadUser, TheRealUsersGroupsAndHomeFromTheDatabases) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root: creates a user with useradd and reads it back as sudo's caller";
  std::string why;
  auto user = testing::TestUser::make(why);
  ASSERT_TRUE(user) << why;
  testing::ScopedEnv sudo(user->sudo_env());
  auto u = workload_user(false);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->uid, user->uid());
  EXPECT_EQ(u->gid, user->gid());
  EXPECT_EQ(u->name, user->name());
  EXPECT_EQ(u->home, user->home().string());
  EXPECT_EQ(u->shell, "/bin/sh");
  EXPECT_THAT(u->groups, Contains(user->gid()));
  EXPECT_THAT(u->groups, Contains(user->extra_gid()));
  EXPECT_THAT(u->groups, Not(Contains(0u)));
  EXPECT_FALSE(workload_user(true).has_value());
}

TEST(WorkloadUser, ACallerWithoutAPasswordEntryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the drop happens only for root";
  testing::ScopedEnv sudo({{"SUDO_UID", "3999999"}, {"SUDO_GID", "3999999"}});
  try {
    workload_user(false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("SUDO_UID=3999999 has no entry in the password database"));
  }
}

}  // namespace
}  // namespace regime
