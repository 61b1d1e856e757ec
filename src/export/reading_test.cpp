// The exporter's round of reads: the power buffer, the cheap fields and the counters every round,
// the slow reads (limits, node state) on slow rounds only, carried in between.
#include "export/reading.hpp"

#include <gtest/gtest.h>

#include "support/test_gpu.hpp"

namespace regime::exporter {
namespace {

TEST(ExportRounds, SlowRoundsComeFirstThenOnceEveryTenSeconds) {
  std::vector<long> slow;
  for (long r = 0; r < 35; ++r)
    if (slow_round(r, 1.0)) slow.push_back(r);
  EXPECT_EQ(slow, (std::vector<long>{0, 10, 20, 30}));
  // Half-second rounds: every 20th; a period of 10 s or more: every round.
  EXPECT_TRUE(slow_round(20, 0.5));
  EXPECT_FALSE(slow_round(10, 0.5));
  for (long r = 0; r < 5; ++r) EXPECT_TRUE(slow_round(r, 15.0));
}

TEST(ExportRounds, ARoundBetweenSlowOnesCarriesTheLimitsAndReadsTheRest) {
  regime::testing::FakeClock clock;
  regime::testing::TestGpu gpu(clock, 400);
  const GpuReading first = read_gpu(gpu, gpu.read_health());
  ASSERT_TRUE(first.sample.energy_J.has_value());
  EXPECT_EQ(gpu.energy_reads, 1);
  EXPECT_EQ(gpu.drains, 1);

  clock.advance_s(1);
  gpu.limit_W = 300;  // a limit changed since: seen on the next slow round, not before
  const GpuReading fast = read_gpu(gpu, gpu.read_health(), &first);
  EXPECT_EQ(gpu.energy_reads, 2);  // the counter, the buffer and the cheap fields are read
  EXPECT_EQ(gpu.drains, 2);
  EXPECT_EQ(gpu.reads, 2);
  ASSERT_TRUE(fast.sample.energy_J.has_value());
  EXPECT_DOUBLE_EQ(*fast.sample.energy_J, *first.sample.energy_J + 400);
  EXPECT_EQ(fast.info.current_limit_W, first.info.current_limit_W);
  EXPECT_EQ(fast.info.uuid, "GPU-test");

  const GpuReading slow = read_gpu(gpu, gpu.read_health());
  EXPECT_EQ(gpu.energy_reads, 3);
  EXPECT_EQ(slow.info.current_limit_W, 300);
}

}  // namespace
}  // namespace regime::exporter
