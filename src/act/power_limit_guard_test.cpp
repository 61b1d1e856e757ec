#include "act/power_limit_guard.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "act/journal.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "support/error_of.hpp"
#include "support/state_dir.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// An in-memory GPU with a settable limit; records whether the journal existed at each set.
class TestGpu : public Gpu {
 public:
  explicit TestGpu(bool physical) : physical_(physical) {}
  GpuInfo info() override {
    GpuInfo g;
    g.device = physical_ ? "nvml:7" : "sim:test";
    g.name = "Test GPU";
    g.uuid = physical_ ? "GPU-test-7" : "";
    g.min_limit_W = 100;
    g.max_limit_W = 300;
    g.default_limit_W = 300;
    g.current_limit_W = g.enforced_limit_W = limit_W;
    return g;
  }
  Sample read() override { return {}; }
  std::optional<double> read_energy_J() override { return std::nullopt; }
  double set_power_limit(double watts) override {
    journal_existed_at_set.push_back(!journal_keys().empty());
    if (fail_sets) throw Error(ErrorKind::NoPermission, "no permission (test)");
    limit_W = watts;
    ++sets;
    return limit_W;
  }
  bool is_physical() const override { return physical_; }

  double limit_W = 300;
  int sets = 0;
  bool fail_sets = false;
  std::vector<bool> journal_existed_at_set;

 private:
  bool physical_;
};

bool has_journal() { return !journal_keys().empty(); }

class GuardTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("REGIME_READ_ONLY"); }
  void TearDown() override { ::unsetenv("REGIME_READ_ONLY"); }
  test::TempStateDir state_{"regime-guard-test"};  // what the tests' main set is back after
  const fs::path dir_ = state_.path();
};

TEST_F(GuardTest, PolicyReadsReadOnlyFromTheEnvironment) {
  EXPECT_FALSE(ActuationPolicy::from_flags(true).read_only);
  ::setenv("REGIME_READ_ONLY", "1", 1);
  EXPECT_TRUE(ActuationPolicy::from_flags(true).read_only);
  ::setenv("REGIME_READ_ONLY", "0", 1);
  EXPECT_FALSE(ActuationPolicy::from_flags(false).read_only);
}

TEST_F(GuardTest, APhysicalGpuIsNotChangedWithoutActuate) {
  TestGpu gpu(true);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(false));
    EXPECT_TRUE(
        test::throws_error([&] { guard.set(200); }, ErrorKind::ActuationRefused, {"--actuate"}));
  }
  EXPECT_EQ(gpu.sets, 0);
  EXPECT_FALSE(has_journal());
}

TEST_F(GuardTest, ReadOnlyBlocksEvenASimulatedGpuAndAHandMadePolicy) {
  TestGpu gpu(false);
  ::setenv("REGIME_READ_ONLY", "1", 1);
  PowerLimitGuard guard(gpu, ActuationPolicy{true, false});
  EXPECT_TRUE(test::throws_error([&] { guard.set(200); }, ErrorKind::ReadOnly));
  EXPECT_EQ(gpu.sets, 0);
}

TEST_F(GuardTest, JournalsTheOriginalBeforeTheFirstChangeAndRestoresOnScopeExit) {
  TestGpu gpu(true);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    EXPECT_DOUBLE_EQ(guard.set(200), 200);
    EXPECT_DOUBLE_EQ(guard.set(150), 150);
    EXPECT_EQ(guard.original_limit_W(), 300);
    Journal j = read_journal();
    ASSERT_EQ(j.entries.size(), 1u);
    EXPECT_EQ(j.entries[0].uuid, "GPU-test-7");
    EXPECT_DOUBLE_EQ(j.entries[0].original_limit_W, 300);
    EXPECT_EQ(j.entries[0].pid, ::getpid());
    EXPECT_FALSE(j.entries[0].kept);
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  ASSERT_GE(gpu.journal_existed_at_set.size(), 1u);
  EXPECT_TRUE(gpu.journal_existed_at_set[0]);  // written before the first change
  EXPECT_FALSE(has_journal());                 // cleared after the restore
}

TEST_F(GuardTest, OutOfRangeIsRefusedBeforeAnythingIsWritten) {
  TestGpu gpu(true);
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  EXPECT_TRUE(test::throws_error([&] { guard.set(900); }, ErrorKind::OutOfRange,
                                 {"cap 900 W is outside the range of"}));
  EXPECT_FALSE(has_journal());
}

TEST_F(GuardTest, KeepLeavesTheCapAndAKeptJournalEntry) {
  TestGpu gpu(true);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    guard.set(180);
    guard.keep();
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 180);
  Journal j = read_journal();
  ASSERT_EQ(j.entries.size(), 1u);
  EXPECT_TRUE(j.entries[0].kept);
  EXPECT_DOUBLE_EQ(j.entries[0].original_limit_W, 300);
  // A later guard restores to what it found (the kept cap), and leaves the original journaled.
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    guard.set(120);
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 180);
  j = read_journal();
  ASSERT_EQ(j.entries.size(), 1u);
  EXPECT_DOUBLE_EQ(j.entries[0].original_limit_W, 300);
}

TEST_F(GuardTest, RestoreIsIdempotent) {
  TestGpu gpu(true);
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  guard.set(200);
  guard.restore();
  guard.restore();
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  EXPECT_EQ(gpu.sets, 2);
}

TEST_F(GuardTest, ASetAfterARestoreIsGuardedAgain) {
  TestGpu gpu(true);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    guard.set(200);
    guard.restore();
    EXPECT_FALSE(has_journal());
    guard.set(150);
    EXPECT_TRUE(has_journal());
    EXPECT_DOUBLE_EQ(gpu.limit_W, 150);
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  EXPECT_FALSE(has_journal());
}

TEST_F(GuardTest, ASimulatedGpuIsRestoredButNotJournaled) {
  TestGpu gpu(false);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(false));  // no --actuate needed
    guard.set(150);
    EXPECT_FALSE(has_journal());
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
}

TEST_F(GuardTest, AFailedFirstSetLeavesNoJournalEntry) {
  TestGpu gpu(true);
  gpu.fail_sets = true;
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    EXPECT_THROW(guard.set(200), Error);
  }
  EXPECT_FALSE(has_journal());
}

TEST_F(GuardTest, ARestoreFailureInTheDestructorKeepsTheJournalAndDoesNotThrow) {
  TestGpu gpu(true);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    guard.set(200);
    gpu.fail_sets = true;
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 200);
  Journal j = read_journal();
  ASSERT_EQ(j.entries.size(), 1u);
  EXPECT_DOUBLE_EQ(j.entries[0].original_limit_W, 300);
}

TEST_F(GuardTest, ASecondGuardOnTheSameGpuInOneProcessIsRefused) {
  TestGpu gpu(true);
  PowerLimitGuard first(gpu, ActuationPolicy::from_flags(true));
  first.set(200);
  PowerLimitGuard second(gpu, ActuationPolicy::from_flags(true));
  EXPECT_TRUE(test::throws_error([&] { second.set(150); }, ErrorKind::ActuationRefused,
                                 {"another part of this process"}));
  EXPECT_DOUBLE_EQ(gpu.limit_W, 200);
  first.restore();
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  EXPECT_FALSE(has_journal());
}

TEST_F(GuardTest, AGuardOverAKeptCapHoldsTheEntryAndGivesItBack) {
  TestGpu gpu(true);
  {
    PowerLimitGuard keeper(gpu, ActuationPolicy::from_flags(true));
    keeper.set(250);
    keeper.keep();
  }
  Journal j = read_journal();
  ASSERT_EQ(j.entries.size(), 1u);
  EXPECT_EQ(j.entries[0].pid, 0);  // nobody holds a kept cap
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    guard.set(120);
    j = read_journal();
    ASSERT_EQ(j.entries.size(), 1u);
    EXPECT_EQ(j.entries[0].pid, ::getpid());  // held while it works
    EXPECT_TRUE(j.entries[0].kept);
    EXPECT_DOUBLE_EQ(j.entries[0].original_limit_W, 300);
    ASSERT_TRUE(j.entries[0].restore_to_W.has_value());
    EXPECT_DOUBLE_EQ(*j.entries[0].restore_to_W, 250);
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 250);
  j = read_journal();
  ASSERT_EQ(j.entries.size(), 1u);
  EXPECT_EQ(j.entries[0].pid, 0);
  EXPECT_TRUE(j.entries[0].kept);
  EXPECT_FALSE(j.entries[0].restore_to_W.has_value());
}

// A guard finding the entry of a process that died holding a cap (kill -9) takes it over with the
// recorded original: at its end the card is back at that original, not at the dead one's cap.
TEST_F(GuardTest, TakingOverADeadProcesssEntryKeepsTheOriginal) {
  TestGpu gpu(true);
  gpu.limit_W = 180;  // the dead process's cap
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  uint64_t ticks = process_start_ticks(child);
  ::waitpid(child, nullptr, 0);
  {
    GpuJournalLock lock("GPU-test-7", "nvml:7");
    lock.write({"nvml:7", "GPU-test-7", 300, child, ticks + 1, 1, false, std::nullopt});
  }
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
    guard.set(150);
    Journal j = read_journal();
    ASSERT_EQ(j.entries.size(), 1u);
    EXPECT_DOUBLE_EQ(j.entries[0].original_limit_W, 300);
    ASSERT_TRUE(guard.original_limit_W().has_value());
    EXPECT_DOUBLE_EQ(*guard.original_limit_W(), 300);
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  EXPECT_FALSE(has_journal());
}

TEST(GuardTakeover, PutsBackTheOriginalOfALeftoverAndTheCapOfAKeptEntry) {
  JournalEntry leftover{"nvml:7", "GPU-test-7", 300, 4242, 99, 1, false, std::nullopt};
  EXPECT_DOUBLE_EQ(takeover_target_W(leftover, 180), 300);
  JournalEntry kept{"nvml:7", "GPU-test-7", 300, 0, 0, 1, true, std::nullopt};
  EXPECT_DOUBLE_EQ(takeover_target_W(kept, 250), 250);
  JournalEntry kept_under_dead{"nvml:7", "GPU-test-7", 300, 4242, 99, 1, true, 250.0};
  EXPECT_DOUBLE_EQ(takeover_target_W(kept_under_dead, 120), 250);
}

// An entry no running guard can have written (no start time) never blocks its GPU, and
// `regime restore` clears it.
TEST_F(GuardTest, AnEntryWithoutAStartTimeIsALeftover) {
  EXPECT_FALSE(process_alive(1, 0));
  EXPECT_FALSE(process_alive(::getpid(), 0));
  TestGpu gpu(true);
  {
    GpuJournalLock lock("GPU-test-7", "nvml:7");
    lock.write({"nvml:7", "GPU-test-7", 300, 1, 0, 1, false, std::nullopt});
  }
  gpu.limit_W = 200;
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  EXPECT_NO_THROW(guard.set(150));
  guard.restore();
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  EXPECT_FALSE(has_journal());
}

// A process that may change limits without being root (CAP_SYS_ADMIN) journals in the one
// system-wide place or not at all: it cannot write root's folder, so it changes nothing.
TEST(PrivilegeByCapability, ACapSysAdminProcessWithoutRootUsesTheSystemJournalOrRefuses) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make such a process";
  pid_t child = ::fork();
  if (child == 0) {
    ::unsetenv("REGIME_SYSTEM_STATE_DIR");
    ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    data[0].effective = data[0].permitted = 1u << CAP_SYS_ADMIN;
    if (::syscall(SYS_capset, &header, data) != 0) ::_exit(11);
    if (!running_privileged()) ::_exit(12);
    if (power_limit_journal_dirs().journal != "/var/lib/regime/power-limits") ::_exit(13);
    TestGpu gpu(true);
    try {
      PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
      guard.set(150);
      ::_exit(14);  // changed without the system-wide journal
    } catch (const Error& e) {
      if (std::string(e.what()).find("CAP_SYS_ADMIN") == std::string::npos) ::_exit(15);
    }
    ::_exit(gpu.sets == 0 ? 0 : 16);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The journal file of TestGpu(true), for tests that plant things there.
fs::path journal_file() { return journal_path() / (journal_key("GPU-test-7", "nvml:7") + ".json"); }

TEST_F(GuardTest, AnUnreadableJournalBlocksTheChangeInsteadOfReadingAsEmpty) {
  TestGpu gpu(true);
  fs::create_directories(journal_file());  // a directory where the file should be
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  EXPECT_TRUE(test::throws_error([&] { guard.set(200); }, ErrorKind::Io,
                                 {"is a directory, not a regular file"}));
  EXPECT_EQ(gpu.sets, 0);
  fs::remove(journal_file());
  std::ofstream(journal_file()) << "{\"device\": \"nvml:7\", \"uuid\": \"GPU-test-7\",";
  EXPECT_TRUE(test::throws_error([&] { guard.set(200); }, ErrorKind::Parse,
                                 {journal_file().string() + ":1:", "fix or remove the file"}));
  EXPECT_EQ(gpu.sets, 0);
}

TEST_F(GuardTest, AFifoOrADeviceAsJournalIsRefusedWithoutHanging) {
  TestGpu gpu(true);
  fs::create_directories(journal_path());
  ASSERT_EQ(::mkfifo(journal_file().c_str(), 0600), 0);
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  // a blocking open would wait here for a writer for ever
  EXPECT_TRUE(test::throws_error([&] { guard.set(200); }, ErrorKind::Io, {"is a FIFO"}));
  fs::remove(journal_file());
  fs::create_symlink("/dev/zero", journal_file());
  EXPECT_TRUE(test::throws_error([&] { guard.set(200); }, ErrorKind::Io, {"is a symbolic link"}));
  EXPECT_EQ(gpu.sets, 0);
  // A planted link as the lock file is refused too, and never followed.
  fs::remove(journal_file());
  fs::path lock = journal_dirs().locks / (journal_key("GPU-test-7", "nvml:7") + ".lock");
  fs::path target = dir_ / "target";
  std::ofstream(target) << "precious";
  fs::remove(lock);
  fs::create_symlink(target, lock);
  EXPECT_THROW(guard.set(200), Error);
  EXPECT_EQ(gpu.sets, 0);
  std::ifstream in(target);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "precious");
}

TEST_F(GuardTest, AJournalDirectoryWritableByOthersIsRefused) {
  TestGpu gpu(true);
  fs::create_directories(journal_path());
  fs::permissions(journal_path(), fs::perms::all);  // 0777
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  EXPECT_TRUE(test::throws_error([&] { guard.set(200); }, ErrorKind::NoPermission,
                                 {"writable by others (mode 0777)"}));
  EXPECT_EQ(gpu.sets, 0);
}

std::atomic<int> g_hangups{0};
extern "C" void count_hangup(int) { g_hangups.fetch_add(1); }

TEST_F(GuardTest, TheLastGuardGoneGivesTheSignalDispositionsBack) {
  struct sigaction counter {
  }, old_hup{}, old_int{}, old_term{};
  counter.sa_handler = count_hangup;
  sigemptyset(&counter.sa_mask);
  ::sigaction(SIGHUP, &counter, &old_hup);
  ::sigaction(SIGINT, nullptr, &old_int);
  ::sigaction(SIGTERM, nullptr, &old_term);
  auto handler_of = [](int sig) {
    struct sigaction now {};
    ::sigaction(sig, nullptr, &now);
    return now.sa_handler;
  };
  TestGpu gpu(false);
  auto first = std::make_unique<PowerLimitGuard>(gpu, ActuationPolicy{});
  auto second = std::make_unique<PowerLimitGuard>(gpu, ActuationPolicy{});
  EXPECT_NE(handler_of(SIGHUP), count_hangup) << "a live guard handles SIGHUP";
  first.reset();
  EXPECT_NE(handler_of(SIGHUP), count_hangup) << "one guard is still live";
  second.reset();
  EXPECT_EQ(handler_of(SIGHUP), count_hangup);
  EXPECT_EQ(handler_of(SIGINT), old_int.sa_handler);
  EXPECT_EQ(handler_of(SIGTERM), old_term.sa_handler);
  if (handler_of(SIGHUP) == count_hangup) {  // else the guard's watcher would end the process
    ::raise(SIGHUP);
    EXPECT_EQ(g_hangups.load(), 1);
  }
  ::sigaction(SIGHUP, &old_hup, nullptr);
}

TEST(Journal, RoundTripsThroughJson) {
  JournalEntry e{"nvml:0", "GPU-a", 700, 42, 12345, 1.7e9, true, 300.0};
  JournalEntry back = parse_journal_entry(to_json(e).dump(), "test");
  EXPECT_EQ(back.device, "nvml:0");
  EXPECT_EQ(back.uuid, "GPU-a");
  EXPECT_DOUBLE_EQ(back.original_limit_W, 700);
  EXPECT_EQ(back.pid, 42);
  EXPECT_EQ(back.pid_start_ticks, 12345u);
  EXPECT_TRUE(back.kept);
  ASSERT_TRUE(back.restore_to_W.has_value());
  EXPECT_DOUBLE_EQ(*back.restore_to_W, 300);
  Journal j;
  j.entries.push_back(back);
  EXPECT_NE(j.find("GPU-a", ""), nullptr);
  EXPECT_EQ(j.find("GPU-b", "nvml:0"), nullptr);
}

std::string parse_error_of(const std::string& text) {
  try {
    parse_journal_entry(text, "/x/GPU-a.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

TEST(Journal, AMalformedEntryNamesTheFileAndWhatIsWrong) {
  EXPECT_THAT(parse_error_of(R"({"uuid": "GPU-a"})"),
              HasSubstr("/x/GPU-a.json: \"device\" is missing"));
  // Numbers are checked before they are converted: no float-to-int overflow, no silent rounding.
  EXPECT_THAT(parse_error_of(R"({"device": "nvml:0", "original_limit_W": 700, "pid": 1.5})"),
              HasSubstr("\"pid\" is 1.5, not a whole number"));
  EXPECT_THAT(parse_error_of(R"({"device": "nvml:0", "original_limit_W": 700, "pid": 1e20})"),
              HasSubstr("\"pid\""));
  EXPECT_THAT(parse_error_of(R"({"device": "nvml:0", "original_limit_W": 700, "pid": -4})"),
              HasSubstr("\"pid\" is -4, outside 0 to"));
  EXPECT_THAT(parse_error_of(R"({"device": "nvml:0", "original_limit_W": -1})"),
              HasSubstr("\"original_limit_W\" is -1, outside"));
  EXPECT_THAT(parse_error_of(R"({"device": "nvml:0", "original_limit_W": "700"})"),
              HasSubstr("\"original_limit_W\" is not a number"));
  EXPECT_THAT(parse_error_of(R"({"device": "nvml:0", "original_limit_W": 700, "kept": 1})"),
              HasSubstr("\"kept\" is not true or false"));
  // JSON errors name line and column, a number too large for a double included.
  EXPECT_THAT(parse_error_of("{\"device\": \"nvml:0\",\n \"original_limit_W\": 1e999}"),
              HasSubstr("/x/GPU-a.json:2:"));
  EXPECT_THAT(parse_error_of("{\"device\": \"nvml:0\",\n \"original_limit_W\": 1e999}"),
              HasSubstr("number overflow"));
  EXPECT_THAT(parse_error_of("{\"device\": \"nvml:0\",\n  oops}"), HasSubstr("/x/GPU-a.json:2:3"));
  EXPECT_THAT(parse_error_of("[1, 2]"), HasSubstr("not a power-limit journal entry"));
}

TEST(Journal, KeysAreSafeFileNames) {
  EXPECT_EQ(journal_key("GPU-8a3c-11", "nvml:0"), "GPU-8a3c-11");
  EXPECT_EQ(journal_key("", "nvml:0"), "device-nvml%3A0");
  EXPECT_EQ(journal_key("../../etc/passwd", ""), "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd");
  EXPECT_EQ(journal_key("", ""), "device-");
}

TEST(Journal, ProcessLivenessTellsDeadAndReusedPidsApart) {
  uint64_t me = process_start_ticks(::getpid());
  EXPECT_GT(me, 0u);
  EXPECT_TRUE(process_alive(::getpid(), me));
  EXPECT_FALSE(process_alive(::getpid(), me + 1));  // same pid, another start: reused
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_alive(child, 0));
}

}  // namespace
}  // namespace regime
