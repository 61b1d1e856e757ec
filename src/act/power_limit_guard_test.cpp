#include "act/power_limit_guard.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "act/journal.hpp"
#include "common/error.hpp"

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
    journal_existed_at_set.push_back(fs::exists(journal_path()));
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

class GuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("regime-guard-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("REGIME_STATE_DIR", dir_.c_str(), 1);
    ::unsetenv("REGIME_READ_ONLY");
  }
  void TearDown() override {
    ::unsetenv("REGIME_STATE_DIR");
    ::unsetenv("REGIME_READ_ONLY");
    fs::remove_all(dir_);
  }
  fs::path dir_;
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
    try {
      guard.set(200);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::ActuationRefused);
      EXPECT_THAT(e.what(), HasSubstr("--actuate"));
    }
  }
  EXPECT_EQ(gpu.sets, 0);
  EXPECT_FALSE(fs::exists(journal_path()));
}

TEST_F(GuardTest, ReadOnlyBlocksEvenASimulatedGpuAndAHandMadePolicy) {
  TestGpu gpu(false);
  ::setenv("REGIME_READ_ONLY", "1", 1);
  PowerLimitGuard guard(gpu, ActuationPolicy{true, false});
  try {
    guard.set(200);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ReadOnly);
  }
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
  EXPECT_FALSE(fs::exists(journal_path()));    // cleared after the restore
}

TEST_F(GuardTest, OutOfRangeIsRefusedBeforeAnythingIsWritten) {
  TestGpu gpu(true);
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  try {
    guard.set(900);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
    EXPECT_THAT(e.what(), HasSubstr("cap 900 W is outside the range of"));
  }
  EXPECT_FALSE(fs::exists(journal_path()));
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
    EXPECT_FALSE(fs::exists(journal_path()));
    guard.set(150);
    EXPECT_TRUE(fs::exists(journal_path()));
    EXPECT_DOUBLE_EQ(gpu.limit_W, 150);
  }
  EXPECT_DOUBLE_EQ(gpu.limit_W, 300);
  EXPECT_FALSE(fs::exists(journal_path()));
}

TEST_F(GuardTest, ASimulatedGpuIsRestoredButNotJournaled) {
  TestGpu gpu(false);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(false));  // no --actuate needed
    guard.set(150);
    EXPECT_FALSE(fs::exists(journal_path()));
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
  EXPECT_FALSE(fs::exists(journal_path()));
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
  Journal j;
  j.entries.push_back({"nvml:0", "GPU-a", 700, 42, 12345, 1.7e9, true});
  Journal back = journal_from_json(to_json(j), "test");
  ASSERT_EQ(back.entries.size(), 1u);
  EXPECT_EQ(back.entries[0].device, "nvml:0");
  EXPECT_EQ(back.entries[0].uuid, "GPU-a");
  EXPECT_DOUBLE_EQ(back.entries[0].original_limit_W, 700);
  EXPECT_EQ(back.entries[0].pid, 42);
  EXPECT_EQ(back.entries[0].pid_start_ticks, 12345u);
  EXPECT_TRUE(back.entries[0].kept);
  EXPECT_NE(back.find("GPU-a", ""), nullptr);
  EXPECT_EQ(back.find("GPU-b", "nvml:0"), nullptr);
}

TEST(Journal, AMalformedEntryNamesTheFileAndTheEntry) {
  auto j = nlohmann::json::parse(R"({"entries": [{"device": "nvml:0"}]})");
  try {
    journal_from_json(j, "/x/power-limits.journal.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_THAT(e.what(), HasSubstr("/x/power-limits.journal.json: entry 0"));
  }
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
