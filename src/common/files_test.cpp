#include "common/files.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "support/error_of.hpp"
#include "support/temp_dir.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string env_or(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

class FilesTest : public ::testing::Test {
 protected:
  test::TempDir tmp_{"regime-files-test"};
  const fs::path dir_ = tmp_.path;
  // The tests' main points the state directories somewhere private; tests here change them.
  testing::ScopedEnv keep_env_{{{"REGIME_STATE_DIR", env_or("REGIME_STATE_DIR")},
                                {"REGIME_SYSTEM_STATE_DIR", env_or("REGIME_SYSTEM_STATE_DIR")}}};
};

using test::error_of;

TEST_F(FilesTest, ARegularFileIsReadAndAnythingElseIsRefusedAtOnce) {
  std::ofstream(dir_ / "a.csv") << "t_s\n1\n";
  EXPECT_EQ(read_regular_file(dir_ / "a.csv"), "t_s\n1\n");
  fs::create_symlink(dir_ / "a.csv", dir_ / "link.csv");  // links to regular files are fine
  EXPECT_EQ(read_regular_file(dir_ / "link.csv"), "t_s\n1\n");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([&] { read_regular_file(dir_ / "fifo"); }), HasSubstr("is a FIFO"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_THAT(error_of([] { read_regular_file("/dev/zero"); }),
              HasSubstr("/dev/zero is a character device, not a regular file"));
  EXPECT_THAT(error_of([&] { read_regular_file(dir_); }), HasSubstr("is a directory"));
  EXPECT_THAT(error_of([&] { read_regular_file(dir_ / "none"); }), HasSubstr("cannot read"));
  EXPECT_THAT(error_of([&] { read_regular_file(dir_ / "a.csv", 3); }),
              HasSubstr("larger than 3 bytes"));
}

TEST_F(FilesTest, TrustRequiresOwnerAndNoWriteForOthers) {
  EXPECT_EQ(untrusted_dir_reason(1000, 040700, 1000), "");
  EXPECT_EQ(untrusted_dir_reason(1000, 040755, 1000), "");
  EXPECT_THAT(untrusted_dir_reason(1001, 040700, 1000), HasSubstr("owned by uid 1001"));
  EXPECT_EQ(untrusted_dir_reason(0, 040755, 1000), "");  // root's
  EXPECT_THAT(untrusted_dir_reason(1000, 040777, 1000),
              HasSubstr("writable by others (mode 0777)"));
  EXPECT_THAT(untrusted_dir_reason(1000, 040770, 1000), HasSubstr("writable by its group"));
  EXPECT_THAT(untrusted_dir_reason(0, 041777, 0), HasSubstr("writable by others (mode 1777)"));
}

TEST_F(FilesTest, SafeDirCreatesPrivateDirectoriesAndRefusesLooseOnes) {
  SafeDir d = SafeDir::open(dir_ / "a" / "b");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "a" / "b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  fs::create_directories(dir_ / "loose");
  fs::permissions(dir_ / "loose", fs::perms::all);
  EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "loose"); }),
              HasSubstr("writable by others (mode 0777)"));
  if (::geteuid() == 0) {  // only root can give a directory away
    fs::create_directories(dir_ / "theirs");
    ASSERT_EQ(testing::give_away(dir_ / "theirs"), 0);
    EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "theirs"); }),
                HasSubstr("owned by uid 65534, not by this user (uid 0) or root"));
    fs::create_symlink(dir_ / "a", dir_ / "planted");
    ASSERT_EQ(testing::give_away(dir_ / "planted"), 0);
    EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "planted"); }),
                HasSubstr("symbolic link owned by uid 65534"));
  }
}

TEST_F(FilesTest, SafeDirRefusesLinksOfOtherUsersAnywhereOnThePath) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a link away";
  fs::create_directories(dir_ / "real" / "state");
  // A link of this user's (or root's) in the middle of the path is followed.
  fs::create_symlink(dir_ / "real", dir_ / "mine");
  EXPECT_EQ(error_of([&] { SafeDir::open(dir_ / "mine" / "state"); }), "");
  // Another user's link in the middle of the path is not, nor one as the whole path.
  fs::create_symlink(dir_ / "real", dir_ / "planted");
  ASSERT_EQ(testing::give_away(dir_ / "planted"), 0);
  EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "planted" / "state"); }),
              HasSubstr("symbolic link owned by uid 65534"));
  ::setenv("REGIME_STATE_DIR", (dir_ / "planted").c_str(), 1);
  EXPECT_THAT(error_of([] { state_dir(); }), HasSubstr("symbolic link owned by uid 65534"));
  // As root, a folder on the way that another user owns is refused too: they could swap what
  // lies under it.
  fs::create_directories(dir_ / "theirs" / "state");
  ASSERT_EQ(testing::give_away(dir_ / "theirs"), 0);
  EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "theirs" / "state"); }),
              HasSubstr("owned by uid 65534"));
}

TEST_F(FilesTest, SafeDirWritesAtomicallyAndNeverThroughALink) {
  SafeDir d = SafeDir::open(dir_ / "s");
  d.write_atomic("j.json", "one");
  EXPECT_EQ(d.read("j.json", 100).value(), "one");
  d.write_atomic("j.json", "two");
  EXPECT_EQ(d.read("j.json", 100).value(), "two");
  EXPECT_EQ(d.list(".json"), std::vector<std::string>{"j.json"});  // no temporary left
  EXPECT_FALSE(d.read("none.json", 100).has_value());
  // A link planted where a file is meant is refused for reading and replaced, not followed,
  // when written: the file it points to is untouched.
  std::ofstream(dir_ / "precious") << "keep";
  fs::create_symlink(dir_ / "precious", dir_ / "s" / "k.json");
  EXPECT_THAT(error_of([&] { d.read("k.json", 100); }), HasSubstr("is a symbolic link"));
  EXPECT_THAT(error_of([&] { ::close(d.open_file("k.json")); }), HasSubstr("is a symbolic link"));
  d.write_atomic("k.json", "new");
  EXPECT_FALSE(fs::is_symlink(dir_ / "s" / "k.json"));
  std::ifstream in(dir_ / "precious");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "keep");
  d.remove("k.json");
  d.remove("k.json");  // absent: no error
  EXPECT_FALSE(fs::exists(dir_ / "s" / "k.json"));
}

TEST_F(FilesTest, StateDirIsCheckedBeforeUse) {
  fs::create_directories(dir_ / "state");
  fs::permissions(dir_ / "state", fs::perms::all);
  ::setenv("REGIME_STATE_DIR", (dir_ / "state").c_str(), 1);
  try {
    state_dir();
    ADD_FAILURE() << "a state dir writable by others was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
    EXPECT_THAT(e.what(), HasSubstr("writable by others"));
  }
  fs::permissions(dir_ / "state", fs::perms::owner_all);
  EXPECT_EQ(state_dir(), dir_ / "state");
  ::unsetenv("REGIME_STATE_DIR");
}

TEST_F(FilesTest, PrivilegedJournalsGoToOnePlaceWhateverTheUserStateDir) {
  ::unsetenv("REGIME_SYSTEM_STATE_DIR");
  ::setenv("REGIME_STATE_DIR", (dir_ / "state").c_str(), 1);
  if (::geteuid() == 0) {
    JournalDirs d = journal_dirs();
    EXPECT_EQ(d.journal, "/var/lib/regime/power-limits");
    EXPECT_EQ(d.locks, "/run/regime/locks");
    EXPECT_TRUE(d.system_wide);
  } else {
    EXPECT_EQ(journal_dirs().journal, dir_ / "state" / "power-limits");
  }
  ::setenv("REGIME_SYSTEM_STATE_DIR", (dir_ / "sys").c_str(), 1);
  EXPECT_EQ(journal_dirs().journal, dir_ / "sys" / "power-limits");
  EXPECT_EQ(journal_dirs().locks, dir_ / "sys" / "locks");
  ::unsetenv("REGIME_SYSTEM_STATE_DIR");
  ::unsetenv("REGIME_STATE_DIR");
}

}  // namespace
}  // namespace regime

namespace regime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The identity of a file: what a descriptor opened by open_trusted_file must match.
std::pair<dev_t, ino_t> identity(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return {st.st_dev, st.st_ino};
}

std::pair<dev_t, ino_t> identity(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return {st.st_dev, st.st_ino};
}

class TrustedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "ownership checks need root to give files away";
    std::ofstream(good_) << "good";
    ::chmod(good_.c_str(), 0644);
  }
  std::string refusal(const fs::path& p) {
    try {
      ::close(open_trusted_file(p, 0));
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }
  test::TempDir tmp_{"regime-trusted", 0755};
  const fs::path dir_ = tmp_.path, good_ = dir_ / "good.so";
};

TEST_F(TrustedFileTest, OpensARootFileThroughRootLinksAndRefusesAnythingAnotherUserControls) {
  int fd = open_trusted_file(good_, 0);
  EXPECT_EQ(identity(fd), identity(good_));
  ::close(fd);
  fs::create_symlink(good_, dir_ / "link.so");
  fd = open_trusted_file(dir_ / "link.so", 0);
  EXPECT_EQ(identity(fd), identity(good_));
  ::close(fd);

  // The file: writable by others, or owned by another user.
  ::chmod(good_.c_str(), 0666);
  EXPECT_THAT(refusal(good_), HasSubstr("writable by others (mode 0666)"));
  ::chmod(good_.c_str(), 0644);
  ASSERT_EQ(testing::give_away(good_), 0);
  EXPECT_THAT(refusal(good_), HasSubstr("owned by uid 65534"));
  ASSERT_EQ(testing::take_back(good_), 0);

  // A link another user made (the file it names would pass).
  fs::path theirs = dir_ / "theirs.so";
  fs::create_symlink(good_, theirs);
  ASSERT_EQ(testing::give_away(theirs), 0);
  EXPECT_THAT(refusal(theirs), HasSubstr(theirs.string() + " cannot be trusted"));

  // A folder on the way that another user owns, also when the file is not there (yet).
  fs::path user_dir = dir_ / "user";
  fs::create_directory(user_dir);
  ASSERT_EQ(testing::give_away(user_dir), 0);
  EXPECT_THAT(refusal(user_dir / "missing" / "lib.so"), HasSubstr("owned by uid 65534"));
  // A folder others may write to (not sticky).
  testing::take_back(user_dir);
  ::chmod(user_dir.c_str(), 0777);
  fs::copy_file(good_, user_dir / "lib.so");
  EXPECT_THAT(refusal(user_dir / "lib.so"), HasSubstr("writable by others"));
  // Sticky like /tmp: others can add names but not replace root's.
  ::chmod(user_dir.c_str(), 01777);
  EXPECT_EQ(refusal(user_dir / "lib.so"), "");
  // Not there at all: an Io error, not a trust refusal.
  try {
    open_trusted_file(dir_ / "none.so", 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
}

// The check and the open are one: with a link swapped as fast as another thread can between a
// trusted file and one anyone could have written, every descriptor returned is the trusted file.
TEST_F(TrustedFileTest, ALinkSwappedDuringTheCheckNeverYieldsTheOtherFile) {
  fs::path bad = dir_ / "bad.so";
  std::ofstream(bad) << "bad";
  ::chmod(bad.c_str(), 0666);
  fs::path a = dir_ / "a", b = dir_ / "b";
  fs::create_symlink(good_, a);
  fs::create_symlink(bad, b);
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    while (!stop) {
      if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
    }
  });
  int opened_good = 0, refused = 0, opened_bad = 0;
  // On a loaded machine the swapper may not be scheduled during the first tries, so go on until
  // both outcomes have been seen (at least 1,500 tries, at most 20 s).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < 1500 || ((refused == 0 || opened_good == 0) &&
                               std::chrono::steady_clock::now() < deadline);
       ++i) {
    try {
      int fd = open_trusted_file(a, 0);
      (identity(fd) == identity(good_) ? opened_good : opened_bad)++;
      ::close(fd);
    } catch (const Error&) {
      ++refused;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(opened_bad, 0);
  EXPECT_GT(swaps.load(), 100);
  // Both outcomes occur, so the race was really run.
  EXPECT_GT(opened_good, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace regime
