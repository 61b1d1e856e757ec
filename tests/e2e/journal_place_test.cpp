// One journal per GPU for every process able to change it, whatever its environment: two root
// actuators racing on one GPU with different REGIME_SYSTEM_STATE_DIR must never leave it capped
// with no journal entry (docs/safety.md, "Threat model"). The fake NVML plays real GPUs here
// (FAKE_NVML_AS_REAL_GPUS=1), so the journal is the machine's own /var/lib/regime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class JournalPlace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the system-wide journal is root's";
    uuid = "GPU-journal-place-" + std::to_string(::getpid());
    box.use_fake_nvml({{"gpus",
                        {{{"name", "NVIDIA H200"},
                          {"uuid", uuid},
                          {"min_limit_W", 200},
                          {"max_limit_W", 700},
                          {"default_limit_W", 700}}}}},
                      Sandbox::holding(uuid, 700));
    entry = fs::path("/var/lib/regime/power-limits") / (uuid + ".json");
  }
  void TearDown() override {
    if (uuid.empty()) return;
    std::error_code ec;
    fs::remove(entry, ec);
    fs::remove(fs::path("/run/regime/locks") / (uuid + ".lock"), ec);
  }
  Env actuator(const std::string& state) const {
    return {{"FAKE_NVML_AS_REAL_GPUS", "1"},
            {"REGIME_SYSTEM_STATE_DIR", (box.path() / state).string()},
            {"REGIME_STATE_DIR", (box.path() / state).string()}};
  }
  Sandbox box;
  std::string uuid;
  fs::path entry;
};

TEST_F(JournalPlace, RacingRootActuatorsWithDifferentStateDirsShareOneJournal) {
  int capped_without_entry = 0, rounds = 200;
  for (int round = 0; round < rounds; ++round) {
    Child a = box.start(
        {"limit", "set", "--device", "nvml:0", "--watts", "400", "--actuate", "--hold", "0"},
        actuator("a"));
    Child b = box.start(
        {"limit", "set", "--device", "nvml:0", "--watts", "300", "--actuate", "--hold", "0"},
        actuator("b"));
    a.wait();
    b.wait();
    double limit_W = box.fake_limit_W(uuid, 700);
    if (limit_W != 700 && !fs::exists(entry)) {
      ++capped_without_entry;
      ADD_FAILURE() << "round " << round << ": left at " << limit_W << " W with no journal entry\n"
                    << a.err() << b.err();
      break;
    }
  }
  EXPECT_EQ(capped_without_entry, 0);
  // Whatever the interleaving, once both have ended the card is back where it started.
  EXPECT_EQ(box.fake_limit_W(uuid, 700), 700);
  EXPECT_FALSE(fs::exists(entry));
  // Neither environment's folder got a journal of its own.
  EXPECT_FALSE(fs::exists(box.path() / "a" / "power-limits" / (uuid + ".json")));
  EXPECT_FALSE(fs::exists(box.path() / "b" / "power-limits" / (uuid + ".json")));
}

TEST_F(JournalPlace, TheOverrideIsIgnoredOutLoudForRealGpus) {
  RunResult r = box.regime({"limit", "set", "--device", "nvml:0", "--watts", "400", "--actuate"},
                           actuator("a"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("REGIME_SYSTEM_STATE_DIR is ignored"));
  EXPECT_TRUE(fs::exists(entry));  // the kept cap's original, where every actuator looks
  r = box.regime({"restore"}, actuator("b"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(box.fake_limit_W(uuid, 700), 700);
  EXPECT_FALSE(fs::exists(entry));
}

}  // namespace
}  // namespace regime::test
