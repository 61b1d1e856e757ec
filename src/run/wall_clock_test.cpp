#include "run/wall_clock.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace regime {
namespace {

TEST(WallClock, ReportsUnixSecondsAndSleepsToAnAbsoluteDeadline) {
  WallClock clock;
  double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double t0 = clock.now_s();
  EXPECT_NEAR(t0, unix_now, 0.5);
  EXPECT_FALSE(clock.is_simulated());
  clock.sleep_until_s(t0 + 0.05);
  double t1 = clock.now_s();
  EXPECT_GE(t1, t0 + 0.05);
  EXPECT_LT(t1, t0 + 0.5);
  clock.sleep_until_s(t0);  // a deadline in the past returns at once
  EXPECT_LT(clock.now_s() - t1, 0.05);
  EXPECT_GE(clock.unix_now_s(), t1);  // monotonic
}

}  // namespace
}  // namespace regime
