#include "common/utc_time.hpp"

#include <gtest/gtest.h>

#include <ctime>

namespace regime {
namespace {

TEST(UtcTime, WritesUtcToTheSecond) {
  EXPECT_EQ(utc_iso(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(utc_iso(1796123922.9), "2026-12-01T11:18:42Z");  // fractions are cut, not rounded
}

TEST(UtcTime, NowIsNow) {
  const std::time_t before = std::time(nullptr);
  const std::string now = utc_now_iso();
  const std::time_t after = std::time(nullptr);
  EXPECT_TRUE(now == utc_iso(static_cast<double>(before)) ||
              now == utc_iso(static_cast<double>(after)))
      << now;
}

}  // namespace
}  // namespace regime
