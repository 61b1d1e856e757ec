// NVML faults over whole runs on the fake NVML: a transient error (TIMEOUT, UNKNOWN) on any read
// is retried and counted and the run goes on; a read that never comes back ends the run with a
// plain message; and whatever happens, an actuating sweep leaves the GPU at its original limit
// with nothing in the journal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr double kOriginalW = 280;

// Every read the sampler or the guard makes.
const char* const kReads[] = {"nvmlDeviceGetTemperature",
                              "nvmlDeviceGetClockInfo",
                              "nvmlDeviceGetUtilizationRates",
                              "nvmlDeviceGetEnforcedPowerLimit",
                              "nvmlDeviceGetPowerManagementLimit",
                              "nvmlDeviceGetFieldValues",
                              "nvmlDeviceGetTotalEnergyConsumption",
                              "nvmlDeviceGetSamples",
                              "nvmlDeviceGetCurrentClocksEventReasons",
                              "nvmlDeviceGetPowerUsage",
                              "nvmlDeviceGetViolationStatus"};

class NvmlFaults : public ::testing::Test {
 protected:
  void use_faults(const json& faults) {
    json gpu = {{"name", "NVIDIA Fake GPU"}, {"uuid", "GPU-fake-faults"}, {"min_limit_W", 100},
                {"max_limit_W", 300},        {"default_limit_W", 300},    {"idle_W", 60},
                {"demand_W", 250},           {"faults", faults}};
    sb_.use_fake_nvml(json{{"gpus", {gpu}}}, Sandbox::holding("GPU-fake-faults", kOriginalW));
  }
  double limit_W() const { return sb_.fake_limit_W("GPU-fake-faults"); }
  bool journaled() const { return sb_.journaled(); }
  RunResult sweep() {
    return sb_.regime({"sweep",      "--device",
                       "nvml:0",     "--caps",
                       "250,200",    "--strategy",
                       "exhaustive", "--settle-s",
                       "0.05",       "--warmup-steps",
                       "1",          "--probe-s",
                       "0.4",        "--step-regex",
                       "step",       "--actuate",
                       "--",         "sh",
                       "-c",         "while true; do echo step; sleep 0.02; done"});
  }
  Sandbox sb_;
};

TEST_F(NvmlFaults, TransientErrorsOnAnyReadAreRetriedAndTheSweepRestores) {
  int cases = 0;
  for (const char* fn : kReads) {
    for (const json& fault :
         {json{{"code", 10}, {"every", 3}}, json{{"code", 999}, {"first", 2}}}) {
      use_faults({{fn, fault}});
      RunResult r = sweep();
      EXPECT_EQ(r.status, 0) << fn << " " << fault.dump() << ": " << r.err;
      EXPECT_DOUBLE_EQ(limit_W(), kOriginalW) << fn << " " << fault.dump();
      EXPECT_FALSE(journaled()) << fn;
      ++cases;
    }
  }
  std::printf("[ figures  ] %d transient-fault sweeps: all finished, 0 left capped\n", cases);
}

TEST_F(NvmlFaults, AReadThatNeverComesBackEndsTheRunPlainlyAndTheSweepRestores) {
  int cases = 0;
  for (const char* fn : kReads) {
    // Answers for a while, then never again: the GPU fell off mid-run.
    use_faults({{fn, {{"code", 999}, {"after", 30}}}});
    RunResult r = sweep();
    if (r.status != 0) {
      EXPECT_EQ(r.status, 6) << fn << ": " << r.err;
      EXPECT_THAT(r.err,
                  ::testing::AnyOf(HasSubstr("stopped answering"), HasSubstr("is not answering")))
          << fn;
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("internal error"))) << fn;
    }
    EXPECT_DOUBLE_EQ(limit_W(), kOriginalW) << fn << " left the GPU capped";
    if (journaled()) {
      // The restore was set but its read-back failed: the entry stays until a later process
      // confirms it.
      RunResult again = sb_.regime({"restore"});
      EXPECT_EQ(again.status, 0) << fn << ": " << again.out << again.err;
      EXPECT_FALSE(journaled()) << fn;
    }
    ++cases;
  }
  // The GPU lost outright: every call of the set fails too, so the journal keeps the original
  // for the next process to restore.
  use_faults({{"nvmlDeviceGetTemperature", {{"code", 15}, {"after", 30}}},
              {"nvmlDeviceSetPowerManagementLimit", {{"code", 15}, {"after", 1}}}});
  RunResult r = sweep();
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_THAT(r.err, HasSubstr("GPU is lost"));
  EXPECT_TRUE(journaled()) << "a cap that could not be undone must stay journaled";
  RunResult restored = sb_.regime({"restore"});  // a new process: the GPU is back
  EXPECT_EQ(restored.status, 0) << restored.out << restored.err;
  EXPECT_DOUBLE_EQ(limit_W(), kOriginalW);
  std::printf("[ figures  ] %d persistent-fault sweeps + 1 lost GPU: 0 left capped\n", cases);
}

TEST_F(NvmlFaults, AProbeCountsItsRetriesInItsRecord) {
  use_faults({{"nvmlDeviceGetTemperature", {{"code", 10}, {"every", 4}}}});
  // 100 reads a second, so that one in four temperature reads failing makes many retries.
  RunResult r = sb_.regime({"probe", "--device", "nvml:0", "--seconds", "1", "--sample-ms", "10",
                            "--no-steps", "--json", "--", "sleep", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_GT(j.at("read_retries").get<long>(), 10);
  EXPECT_EQ(j.at("failed_reads").get<long>(), 0);
  // In the run database too: the report is stored with the run.
  RunResult shown = sb_.regime({"probe", "--device", "nvml:0", "--seconds", "0.5", "--sample-ms",
                                "10", "--no-steps", "--", "sleep", "2"});
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("retried after a transient error, 0 given up"));
}

}  // namespace
}  // namespace regime::test
