// The guards of a data-parallel job's GPUs, on the fake NVML (the real C ABI) with four GPUs.
#include "act/guard_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "act/journal.hpp"
#include "common/error.hpp"
#include "device/nvml/nvml_gpu.hpp"
#include "support/state_dir.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class GuardSetFake : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("REGIME_READ_ONLY"); }
  // Four H200-like GPUs; `failing` (if >= 0) refuses every set with NO_PERMISSION;
  // `second_fails` (if >= 0) takes its first set and refuses every later one.
  std::vector<std::unique_ptr<nvml::NvmlGpu>> open(int failing, int second_fails = -1) {
    json gpus = json::array();
    for (int i = 0; i < 4; ++i) {
      json g = {{"name", "NVIDIA H200"},  {"uuid", "GPU-set-" + std::to_string(i)},
                {"min_limit_W", 200},     {"max_limit_W", 700},
                {"default_limit_W", 700}, {"idle_W", 80},
                {"demand_W", 690}};
      if (i == failing) g["errors"] = {{"nvmlDeviceSetPowerManagementLimit", 4}};
      if (i == second_fails)
        g["faults"] = {{"nvmlDeviceSetPowerManagementLimit", {{"after", 1}, {"code", 4}}}};
      gpus.push_back(g);
    }
    std::ofstream(dir_ / "config.json") << json{{"gpus", gpus}}.dump();
    ::setenv("FAKE_NVML_CONFIG", (dir_ / "config.json").c_str(), 1);
    ::setenv("FAKE_NVML_STATE", (dir_ / "state.json").c_str(), 1);
    lib_ = nvml::NvmlLibrary::load(REGIME_FAKE_NVML);
    std::vector<std::unique_ptr<nvml::NvmlGpu>> out;
    for (unsigned i = 0; i < 4; ++i) out.push_back(std::make_unique<nvml::NvmlGpu>(lib_, i));
    return out;
  }
  static std::vector<Gpu*> raw(const std::vector<std::unique_ptr<nvml::NvmlGpu>>& g) {
    std::vector<Gpu*> out;
    for (const auto& p : g) out.push_back(p.get());
    return out;
  }
  test::TempStateDir state_{"regime-guard-set-test"};
  const fs::path dir_ = state_.path();
  std::shared_ptr<nvml::NvmlLibrary> lib_;
};

TEST_F(GuardSetFake, SetsEveryGpuAndRestoresEveryOne) {
  auto gpus = open(-1);
  {
    PowerLimitGuardSet set(raw(gpus), ActuationPolicy::from_flags(true));
    std::vector<double> enforced = set.set_all(500);
    ASSERT_EQ(enforced.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_DOUBLE_EQ(enforced[i], 500) << i;
      EXPECT_DOUBLE_EQ(gpus[i]->info().enforced_limit_W, 500) << i;
    }
    EXPECT_EQ(journal_keys().size(), 4u);  // each GPU journaled: `regime restore` finds all
    set.restore();
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(gpus[i]->info().enforced_limit_W, 700) << i;
  EXPECT_TRUE(journal_keys().empty());
}

TEST_F(GuardSetFake, AFailedSetOnASingleGpuKeepsItsOwnError) {
  auto gpus = open(0);
  PowerLimitGuardSet set({gpus[0].get()}, ActuationPolicy::from_flags(true));
  try {
    set.set_all(450);
    FAIL() << "a set on a GPU that refuses it should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("of 1")));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("of the job")));
  }
  EXPECT_DOUBLE_EQ(gpus[0]->info().enforced_limit_W, 700);
}

class GuardSetFailing : public GuardSetFake, public ::testing::WithParamInterface<int> {};

TEST_P(GuardSetFailing, AFailedSetOnOneGpuRestoresTheOthers) {
  const int failing = GetParam();
  auto gpus = open(failing);
  PowerLimitGuardSet set(raw(gpus), ActuationPolicy::from_flags(true));
  try {
    set.set_all(450);
    FAIL() << "a set on GPU " << failing << " should have failed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
    EXPECT_THAT(e.what(), HasSubstr("on GPU " + std::to_string(failing) + " of 4"));
    EXPECT_THAT(e.what(), HasSubstr("every GPU of the job was restored"));
  }
  // The GPUs set before the failure are back at their original limit, the others untouched.
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(gpus[i]->info().enforced_limit_W, 700) << i;
  EXPECT_TRUE(journal_keys().empty());
}

INSTANTIATE_TEST_SUITE_P(Gpu1And3, GuardSetFailing, ::testing::Values(1, 3));

// A restore that fails as well: the message names the GPUs that are back and the one that is not,
// never "every GPU was restored".
TEST_F(GuardSetFake, ARestoreFailingTooIsNamedAndTheOthersListed) {
  auto gpus = open(3, 1);  // GPU 1 takes the cap and refuses the restore
  PowerLimitGuardSet set(raw(gpus), ActuationPolicy::from_flags(true));
  try {
    set.set_all(450);
    FAIL() << "a set on GPU 3 should have failed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("on GPU 3 of 4"));
    EXPECT_THAT(e.what(), HasSubstr("restored to the original limit: nvml:0, nvml:2, nvml:3"));
    EXPECT_THAT(e.what(), HasSubstr("restoring GPU nvml:1 failed too"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("every GPU")));
  }
  EXPECT_DOUBLE_EQ(gpus[0]->info().enforced_limit_W, 700);
  EXPECT_DOUBLE_EQ(gpus[1]->info().enforced_limit_W, 450);  // still capped, still journaled
  EXPECT_EQ(journal_keys().size(), 1u);
}

}  // namespace
}  // namespace regime
