// A privileged `regime` offered another user's library through REGIME_NVML_LIBRARY, with the
// link swapped between root's library and a hostile one as fast as the attacker can: the hostile
// library's constructor must never run (docs/safety.md, "Threat model").
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"
#include "support/test_user.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::kOtherUid;

// A process that swaps links `a` and `b` (renameat2 RENAME_EXCHANGE) until killed, as `uid`.
pid_t start_swapper(const fs::path& a, const fs::path& b, uid_t uid) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (uid != 0 && (::setgid(uid) != 0 || ::setuid(uid) != 0)) ::_exit(3);
    for (;;) ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
  }
  return pid;
}

void stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
}

class NvmlLibraryTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the attack is on a privileged process";
    box.use_fake_nvml({{"gpus",
                        {{{"name", "NVIDIA H200"},
                          {"uuid", "GPU-trust-0"},
                          {"min_limit_W", 200},
                          {"max_limit_W", 700},
                          {"default_limit_W", 700}}}}});
  }
  // `regime limit show` as root with REGIME_NVML_LIBRARY=library, `runs` times; counts the runs
  // that read the GPU and those refused, and fails on any other outcome.
  std::pair<int, int> run_many(const fs::path& library, int runs) {
    int read = 0, refused = 0;
    for (int i = 0; i < runs; ++i) {
      RunResult r = box.regime(
          {"limit", "show", "--device", "nvml:0", "--json"},
          {{"REGIME_NVML_LIBRARY", library.string()}, {"HOSTILE_LIBRARY_MARKER", marker.string()}});
      if (r.status == 0 && r.out.find("GPU-trust-0") != std::string::npos) {
        ++read;
      } else if (r.err.find("refusing to load REGIME_NVML_LIBRARY") != std::string::npos) {
        ++refused;
      } else {
        ADD_FAILURE() << "run " << i << ": exit " << r.status << "\n" << r.err;
        break;
      }
    }
    return {read, refused};
  }
  Sandbox box;
  // A folder in /tmp the attacker could use (sticky /tmp lets them make one).
  TempDir attacker{"regime-attacker", 0755};
  const fs::path attacker_dir = attacker.path, marker = box.path() / "hostile-library-loaded";
};

// The attack as it was found: the user's own folder holds a link they swap between root's
// library and theirs. Their folder decides nothing: every run is refused before any load.
TEST_F(NvmlLibraryTrust, AnotherUsersSwappedLinkIsNeverLoaded) {
  fs::path evil = attacker_dir / "evil.so";
  fs::copy_file(REGIME_HOSTILE_LIBRARY, evil);
  fs::create_symlink(REGIME_FAKE_NVML, attacker_dir / "a");
  fs::create_symlink(evil, attacker_dir / "b");
  for (const char* f : {"evil.so", "a", "b"}) ASSERT_EQ(testing::give_away(attacker_dir / f), 0);
  ASSERT_EQ(testing::give_away(attacker_dir), 0);
  pid_t swapper = start_swapper(attacker_dir / "a", attacker_dir / "b", kOtherUid);
  auto [read, refused] = run_many(attacker_dir / "a", 1000);
  stop(swapper);
  EXPECT_FALSE(fs::exists(marker)) << "the hostile library ran as root";
  EXPECT_EQ(read, 0);
  EXPECT_EQ(refused, 1000);
  // A folder that does not exist yet is no different.
  RunResult r = box.regime({"limit", "show", "--device", "nvml:0"},
                           {{"REGIME_NVML_LIBRARY", (attacker_dir / "later" / "lib.so").string()}});
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.err, HasSubstr("owned by uid 65534"));
}

// The check and the load are one: in a folder only root controls, a link swapped between root's
// library and one anyone could have written is either refused or loads root's, never the other.
TEST_F(NvmlLibraryTrust, TheFileCheckedIsTheFileLoaded) {
  fs::path evil = attacker_dir / "evil.so";
  fs::copy_file(REGIME_HOSTILE_LIBRARY, evil);
  ::chmod(evil.c_str(), 0666);  // root's, but anyone could have written it
  fs::create_symlink(REGIME_FAKE_NVML, attacker_dir / "a");
  fs::create_symlink(evil, attacker_dir / "b");
  pid_t swapper = start_swapper(attacker_dir / "a", attacker_dir / "b", 0);
  auto [read, refused] = run_many(attacker_dir / "a", 500);
  stop(swapper);
  EXPECT_FALSE(fs::exists(marker)) << "the library loaded was not the one checked";
  EXPECT_EQ(read + refused, 500);
  EXPECT_GT(read, 0);  // both happened: the race ran
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace regime::test
