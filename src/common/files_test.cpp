#include "common/files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "common/paths.hpp"
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
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "regime-files-test-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  // The tests' main points the state directories somewhere private; tests here change them.
  testing::ScopedEnv keep_env_{{{"REGIME_STATE_DIR", env_or("REGIME_STATE_DIR")},
                                {"REGIME_SYSTEM_STATE_DIR", env_or("REGIME_SYSTEM_STATE_DIR")}}};
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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
    ASSERT_EQ(::chown((dir_ / "theirs").c_str(), 65534, 65534), 0);
    EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "theirs"); }),
                HasSubstr("owned by uid 65534, not by this user (uid 0)"));
    fs::create_symlink(dir_ / "a", dir_ / "planted");
    ASSERT_EQ(::lchown((dir_ / "planted").c_str(), 65534, 65534), 0);
    EXPECT_THAT(error_of([&] { SafeDir::open(dir_ / "planted"); }),
                HasSubstr("symbolic link owned by uid 65534"));
  }
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
