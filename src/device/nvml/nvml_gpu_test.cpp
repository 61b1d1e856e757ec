// Unit tests of the NVML loader and NvmlGpu, run in-process against the fake NVML library.
#include "device/nvml/nvml_gpu.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/temp_dir.hpp"
#include "support/test_user.hpp"

namespace regime::nvml {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

TEST(NvmlErrors, EveryCodeTheUserMeetsHasItsKindAndAPlainMessage) {
  EXPECT_EQ(error_kind(NVML_ERROR_NO_PERMISSION), ErrorKind::NoPermission);
  EXPECT_EQ(error_kind(NVML_ERROR_NOT_SUPPORTED), ErrorKind::NotSupported);
  EXPECT_EQ(error_kind(NVML_ERROR_GPU_IS_LOST), ErrorKind::GpuLost);
  EXPECT_EQ(error_kind(NVML_ERROR_UNINITIALIZED), ErrorKind::Uninitialized);
  EXPECT_EQ(error_kind(NVML_ERROR_DRIVER_NOT_LOADED), ErrorKind::LibraryNotFound);
  EXPECT_EQ(error_kind(NVML_ERROR_UNKNOWN), ErrorKind::Internal);
  Error e = make_error(NVML_ERROR_NO_PERMISSION, "nvmlDeviceSetPowerManagementLimit", "nvml:0",
                       "Insufficient Permissions");
  EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
  EXPECT_THAT(e.what(), HasSubstr("nvmlDeviceSetPowerManagementLimit on nvml:0"));
  EXPECT_THAT(e.what(), HasSubstr("root or CAP_SYS_ADMIN"));
  EXPECT_THAT(e.what(), HasSubstr("code 4"));
  EXPECT_THAT(make_error(NVML_ERROR_GPU_IS_LOST, "x", "nvml:1").what(), HasSubstr("GPU is lost"));
  EXPECT_THAT(make_error(NVML_ERROR_NOT_SUPPORTED, "x", "nvml:1").what(),
              HasSubstr("not supported"));
}

TEST(NvmlLoader, AMissingLibraryNamesTheFileAndTheReason) {
  try {
    NvmlLibrary::load("/nonexistent/libnvidia-ml.so.1");
    FAIL() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::LibraryNotFound);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));  // dlerror()
  }
}

TEST(NvmlLoader, ALibraryThatIsNotNvmlIsRefusedByName) {
  try {
    NvmlLibrary::load("libm.so.6");
    FAIL() << "libm accepted as NVML";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::LibraryNotFound);
    EXPECT_THAT(e.what(), HasSubstr("lacks the function nvmlInit_v2"));
  }
}

TEST(NvmlLoader, LibraryPathComesFromTheEnvironment) {
  const char* old = std::getenv("REGIME_NVML_LIBRARY");
  std::string saved = old ? old : "";
  ::unsetenv("REGIME_NVML_LIBRARY");
  EXPECT_EQ(library_path(), "libnvidia-ml.so.1");
  ::setenv("REGIME_NVML_LIBRARY", "/opt/x/libnvidia-ml.so", 1);
  EXPECT_EQ(library_path(), "/opt/x/libnvidia-ml.so");
  if (old)
    ::setenv("REGIME_NVML_LIBRARY", saved.c_str(), 1);
  else
    ::unsetenv("REGIME_NVML_LIBRARY");
}

TEST(NvmlValues, EveryValueTypeConverts) {
  nvmlValue_t v{};
  v.uiVal = 4242;
  EXPECT_DOUBLE_EQ(value_as_double(v, NVML_VALUE_TYPE_UNSIGNED_INT), 4242);
  v.ullVal = 1ULL << 40;
  EXPECT_DOUBLE_EQ(value_as_double(v, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG), 1099511627776.0);
  v.dVal = 1.5;
  EXPECT_DOUBLE_EQ(value_as_double(v, NVML_VALUE_TYPE_DOUBLE), 1.5);
  v.sllVal = -7;
  EXPECT_DOUBLE_EQ(value_as_double(v, NVML_VALUE_TYPE_SIGNED_LONG_LONG), -7);
}

// Loads the fake NVML with a config of one GPU (H200-like), state in a temp file.
class NvmlGpuFake : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = json::parse(R"({"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-unit-0",
        "min_limit_W": 200, "max_limit_W": 700, "default_limit_W": 700, "max_sm_MHz": 1980,
        "max_mem_MHz": 3201, "idle_W": 80, "demand_W": 690, "ambient_C": 30, "temp_per_W": 0.05}]})");
  }
  std::unique_ptr<NvmlGpu> open() {
    std::ofstream(dir_ / "config.json") << config_.dump();
    ::setenv("FAKE_NVML_CONFIG", (dir_ / "config.json").c_str(), 1);
    ::setenv("FAKE_NVML_STATE", (dir_ / "state.json").c_str(), 1);
    lib_ = NvmlLibrary::load(REGIME_FAKE_NVML);
    return std::make_unique<NvmlGpu>(lib_, 0);
  }
  unsigned calls(const char* fn) {
    auto count = reinterpret_cast<unsigned (*)(const char*)>(lib_->symbol("fakeNvmlCallCount"));
    return count(fn);
  }
  test::TempDir tmp_{"regime-nvml-test"};
  const fs::path dir_ = tmp_.path;
  json config_;
  std::shared_ptr<NvmlLibrary> lib_;
};

TEST_F(NvmlGpuFake, InfoHasLimitsThresholdsAndClocks) {
  auto gpu = open();
  GpuInfo g = gpu->info();
  EXPECT_EQ(g.device, "nvml:0");
  EXPECT_EQ(g.name, "NVIDIA H200");
  EXPECT_EQ(g.uuid, "GPU-unit-0");
  EXPECT_DOUBLE_EQ(g.min_limit_W, 200);
  EXPECT_DOUBLE_EQ(g.max_limit_W, 700);
  EXPECT_DOUBLE_EQ(g.enforced_limit_W, 700);
  EXPECT_EQ(g.slowdown_temp_C, 89);
  EXPECT_EQ(g.max_sm_MHz, 1980);
  EXPECT_TRUE(gpu->is_physical());
}

TEST_F(NvmlGpuFake, MinorNumberIsTheDeviceFilesNotTheIndex) {
  EXPECT_EQ(open()->info().minor_number, 0);  // the fake's default: its index
  config_["gpus"][0]["minor"] = 3;
  GpuInfo g = open()->info();
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.minor_number, 3);
  EXPECT_EQ(to_json(g).at("minor_number"), 3);
  // A driver that does not answer: no minor number, which JSON writes as null.
  config_["gpus"][0]["errors"] = {{"nvmlDeviceGetMinorNumber", 3}};
  g = open()->info();
  EXPECT_FALSE(g.minor_number.has_value());
  EXPECT_TRUE(to_json(g).at("minor_number").is_null());
}

TEST_F(NvmlGpuFake, PowerFollowsTheLimitAndClocksDropWithTheCapReasonSet) {
  auto gpu = open();
  Sample free = gpu->read();
  ASSERT_TRUE(free.power_W && free.power_avg_W && free.sm_MHz && free.reasons && free.temp_C);
  EXPECT_NEAR(*free.power_W, 690, 3);
  EXPECT_DOUBLE_EQ(*free.power_avg_W, 690);
  EXPECT_DOUBLE_EQ(*free.sm_MHz, 1980);
  EXPECT_EQ(*free.reasons & reason::kSwPowerCap, 0u);
  EXPECT_DOUBLE_EQ(gpu->set_power_limit(400), 400);
  Sample capped = gpu->read();
  EXPECT_NEAR(*capped.power_W, 400, 3);
  EXPECT_DOUBLE_EQ(*capped.limit_W, 400);
  EXPECT_LT(*capped.sm_MHz, 1980);
  EXPECT_NE(*capped.reasons & reason::kSwPowerCap, 0u);
  EXPECT_LT(*capped.temp_C, *free.temp_C);
  EXPECT_GT(capped.t_s, 1.7e9);  // Unix seconds
}

TEST_F(NvmlGpuFake, SetOutsideTheRangeNamesIt) {
  auto gpu = open();
  unsigned sets_before = calls("nvmlDeviceSetPowerManagementLimit");
  try {
    gpu->set_power_limit(900);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
    EXPECT_THAT(e.what(), HasSubstr("cap 900 W is outside the range of nvml:0 (200-700 W)"));
  }
  EXPECT_EQ(calls("nvmlDeviceSetPowerManagementLimit"), sets_before);
}

TEST_F(NvmlGpuFake, InjectedErrorsBecomeTypedErrors) {
  config_["gpus"][0]["errors"] = {{"nvmlDeviceSetPowerManagementLimit", 4},
                                  {"nvmlDeviceGetEnforcedPowerLimit", 15}};
  auto gpu = open();
  try {
    gpu->set_power_limit(300);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
  }
  try {
    gpu->read();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuLost);
  }
}

TEST_F(NvmlGpuFake, AnUnsupportedFieldIsAskedOnceAndTheInstantPowerFallsBack) {
  config_["gpus"][0]["unsupported_fields"] = {185, 186};
  config_["gpus"][0]["errors"] = {{"nvmlDeviceGetTemperature", 3},
                                  {"nvmlDeviceGetCurrentClocksEventReasons", 3}};
  auto gpu = open();
  unsigned fv0 = calls("nvmlDeviceGetFieldValues"), t0 = calls("nvmlDeviceGetTemperature");
  unsigned pu0 = calls("nvmlDeviceGetPowerUsage");
  for (int i = 0; i < 5; ++i) {
    Sample s = gpu->read();
    ASSERT_TRUE(s.power_W);  // from nvmlDeviceGetPowerUsage
    EXPECT_NEAR(*s.power_W, 690, 3);
    EXPECT_FALSE(s.power_avg_W);
    EXPECT_FALSE(s.temp_C);
    EXPECT_FALSE(s.reasons);
  }
  EXPECT_EQ(calls("nvmlDeviceGetFieldValues") - fv0, 1u);
  EXPECT_EQ(calls("nvmlDeviceGetTemperature") - t0, 1u);
  EXPECT_EQ(calls("nvmlDeviceGetPowerUsage") - pu0, 5u);
}

TEST_F(NvmlGpuFake, PowerSamplesAreDrainedOnceWithUnixTimestamps) {
  auto gpu = open();
  auto first = gpu->drain_power_points();
  ASSERT_GE(first.size(), 100u);  // the driver's buffer: about 2.4 s of 20 ms points
  EXPECT_LE(first.size(), 120u);
  for (size_t i = 1; i < first.size(); ++i)
    EXPECT_NEAR(first[i].t_s - first[i - 1].t_s, 0.02, 1e-6);
  EXPECT_GT(first.back().t_s, 1.7e9);
  EXPECT_NEAR(first.back().power_W, 690, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  auto second = gpu->drain_power_points();
  ASSERT_FALSE(second.empty());
  EXPECT_LE(second.size(), 7u);  // only the points newer than the last drain
  EXPECT_GT(second.front().t_s, first.back().t_s);
}

TEST_F(NvmlGpuFake, EnergyCounterIntegratesPowerOverTime) {
  auto gpu = open();
  auto e0 = gpu->read_energy_J();
  ASSERT_TRUE(e0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto e1 = gpu->read_energy_J();
  double dE = *e1 - *e0;
  EXPECT_GT(dE, 690 * 0.19);
  EXPECT_LT(dE, 690 * 0.5);  // generous: a loaded CI machine may oversleep
}

TEST_F(NvmlGpuFake, ReasonTimesCountTimeUnderTheCap) {
  auto gpu = open();
  gpu->set_power_limit(300);
  auto t0 = gpu->read_reason_times();
  ASSERT_TRUE(t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto t1 = gpu->read_reason_times();
  double capped =
      t1->seconds_by_reason.at(reason::kSwPowerCap) - t0->seconds_by_reason.at(reason::kSwPowerCap);
  EXPECT_GT(capped, 0.14);
  EXPECT_LT(capped, 0.6);
  EXPECT_DOUBLE_EQ(t1->seconds_by_reason.at(reason::kHwThermal), 0);
}

// Driver 580 on the H200 answers fields 74 and 76 but refuses 251-253 (nvidia-smi still shows
// all five counters): thermal comes from the THERMAL perf policy, under both thermal bits.
TEST_F(NvmlGpuFake, RefusedSlowdownFieldsFallBackToTheThermalPerfPolicyField) {
  config_["gpus"][0]["unsupported_fields"] = {251, 252, 253};
  config_["gpus"][0]["thermal_violation_s"] = 4.5;
  auto gpu = open();
  auto t = gpu->read_reason_times();
  ASSERT_TRUE(t);
  const auto& by = t->seconds_by_reason;
  const uint64_t thermal = reason::kSwThermal | reason::kHwThermal;
  ASSERT_TRUE(by.count(thermal)) << "thermal slowdown as a whole, from field 75";
  EXPECT_DOUBLE_EQ(by.at(thermal), 4.5);
  EXPECT_FALSE(by.count(reason::kSwThermal));  // never split or counted twice
  EXPECT_FALSE(by.count(reason::kHwThermal));
  EXPECT_FALSE(by.count(reason::kHwPowerBrake));  // no honest fallback exists
  EXPECT_TRUE(by.count(reason::kSwPowerCap));
  EXPECT_TRUE(by.count(reason::kSyncBoost));
}

TEST_F(NvmlGpuFake, RefusedFieldsFallBackToViolationStatusAndItIsAskedOnlyWhileItAnswers) {
  config_["gpus"][0]["unsupported_fields"] = {74, 75, 76, 251, 252, 253};
  config_["gpus"][0]["thermal_violation_s"] = 2.0;
  auto gpu = open();
  gpu->set_power_limit(300);
  unsigned v0 = calls("nvmlDeviceGetViolationStatus");
  auto t0 = gpu->read_reason_times();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto t1 = gpu->read_reason_times();
  ASSERT_TRUE(t0 && t1);
  EXPECT_EQ(calls("nvmlDeviceGetViolationStatus") - v0, 6u);  // power, sync boost, thermal, twice
  const auto& by = t1->seconds_by_reason;
  double capped = by.at(reason::kSwPowerCap) - t0->seconds_by_reason.at(reason::kSwPowerCap);
  EXPECT_GT(capped, 0.14);  // NVML_PERF_POLICY_POWER counts the time under the cap
  EXPECT_LT(capped, 0.6);
  EXPECT_DOUBLE_EQ(by.at(reason::kSyncBoost), 0);
  EXPECT_DOUBLE_EQ(by.at(reason::kSwThermal | reason::kHwThermal), 2.0);
  EXPECT_EQ(by.size(), 3u);
}

TEST_F(NvmlGpuFake, WithNeitherSourceTheReasonTimesAreAbsentAndNotAskedAgain) {
  config_["gpus"][0]["unsupported_fields"] = {74, 75, 76, 251, 252, 253};
  config_["gpus"][0]["errors"] = {{"nvmlDeviceGetViolationStatus", 3}};
  auto gpu = open();
  EXPECT_FALSE(gpu->read_reason_times());
  unsigned f0 = calls("nvmlDeviceGetFieldValues"), v0 = calls("nvmlDeviceGetViolationStatus");
  EXPECT_FALSE(gpu->read_reason_times());
  EXPECT_EQ(calls("nvmlDeviceGetFieldValues") - f0, 0u);
  EXPECT_EQ(calls("nvmlDeviceGetViolationStatus") - v0, 0u);
}

TEST_F(NvmlGpuFake, TheLimitIsSharedThroughTheStateFile) {
  auto gpu = open();
  gpu->set_power_limit(333);
  json state = json::parse(std::ifstream(dir_ / "state.json"));
  EXPECT_DOUBLE_EQ(state.at("GPU-unit-0").at("limit_W").get<double>(), 333);
  auto again = open();  // a fresh init, as another process would do
  EXPECT_DOUBLE_EQ(again->info().current_limit_W, 333);
}

TEST_F(NvmlGpuFake, TransientReadErrorsAreRetriedAndCounted) {
  // Every other temperature read times out, every third clock read fails with UNKNOWN: each
  // is answered on a retry, so no sample loses a field.
  config_["gpus"][0]["faults"] = {
      {"nvmlDeviceGetTemperature", {{"code", 10}, {"every", 2}}},
      {"nvmlDeviceGetClockInfo", {{"code", 999}, {"every", 3}}},
      {"nvmlDeviceGetPowerManagementLimit", {{"code", 10}, {"first", 2}}}};
  auto gpu = open();
  EXPECT_DOUBLE_EQ(gpu->info().current_limit_W, 700);  // the first two reads failed
  for (int i = 0; i < 20; ++i) {
    Sample s = gpu->read();
    EXPECT_TRUE(s.temp_C && s.sm_MHz && s.mem_MHz) << i;
  }
  ReadHealth h = gpu->read_health();
  EXPECT_GE(h.retried_reads, 2 + 10 + 13);
  EXPECT_EQ(h.failed_reads, 0);
}

TEST_F(NvmlGpuFake, AReadThatKeepsFailingLeavesTheFieldEmptyThenSaysTheGpuStoppedAnswering) {
  config_["gpus"][0]["faults"] = {{"nvmlDeviceGetTemperature", {{"code", 10}, {"first", 1000000}}}};
  auto gpu = open();
  int empty = 0;
  try {
    for (int i = 0; i < 1000; ++i) {
      Sample s = gpu->read();
      EXPECT_FALSE(s.temp_C);
      EXPECT_TRUE(s.power_W && s.limit_W);  // the rest of the sample is there
      ++empty;
    }
    FAIL() << "a field that never answers was tolerated for ever";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuLost);
    EXPECT_THAT(e.what(),
                HasSubstr("nvmlDeviceGetTemperature on nvml:0: failed 100 reads in a row"));
    EXPECT_THAT(e.what(), HasSubstr("stopped answering"));
  }
  EXPECT_EQ(empty, 99);
  EXPECT_EQ(gpu->read_health().failed_reads, 100);
  EXPECT_EQ(gpu->read_health().retried_reads, 200);
}

TEST_F(NvmlGpuFake, ALimitReadThatKeepsTimingOutIsAPlainError) {
  config_["gpus"][0]["faults"] = {
      {"nvmlDeviceGetPowerManagementLimit", {{"code", 10}, {"first", 1000000}}}};
  auto gpu = open();
  try {
    gpu->info();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuLost);
    EXPECT_THAT(e.what(), HasSubstr("timed out 3 times in a row"));
  }
}

TEST_F(NvmlGpuFake, NoPermissionOnAReadDoesNotTalkAboutChangingLimits) {
  config_["gpus"][0]["errors"] = {{"nvmlDeviceGetPowerManagementLimit", 4}};
  auto gpu = open();
  try {
    gpu->info();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
    EXPECT_THAT(e.what(), HasSubstr("no permission to read this"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("changing a power limit")));
  }
}

// The positive case, a root-owned library in root's folders, is what every test on the fake NVML
// loads as root; here the refusals, made before anything is loaded.
TEST(NvmlLoader, APrivilegedProcessRefusesALibraryAnotherUserCouldHaveChosen) {
  if (::geteuid() != 0) GTEST_SKIP() << "ownership checks need root to give files away";
  const test::TempDir dir("regime-nvml-lib", 0755);
  fs::path lib = dir / "libnvidia-ml.so.1";
  fs::copy_file(REGIME_FAKE_NVML, lib);
  auto refusal = [](const fs::path& p) -> std::string {
    try {
      NvmlLibrary::load(p.string());
      return "";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::NoPermission) << e.what();
      return e.what();
    }
  };
  fs::permissions(lib, fs::perms::all);
  EXPECT_THAT(refusal(lib), HasSubstr("writable by others (mode 0777)"));
  fs::permissions(lib, fs::perms::owner_all);
  ASSERT_EQ(testing::give_away(lib), 0);
  EXPECT_THAT(refusal(lib), HasSubstr("owned by uid 65534"));
  ASSERT_EQ(testing::take_back(lib), 0);
  fs::permissions(dir, fs::perms::all);  // anyone could swap the file
  fs::create_symlink(lib, dir / "link.so");
  EXPECT_THAT(refusal(dir / "link.so"), HasSubstr("writable by others"));
  EXPECT_THAT(refusal(dir / "link.so"), HasSubstr("refusing to load"));
}

}  // namespace
}  // namespace regime::nvml
