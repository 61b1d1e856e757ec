#include "report/downsample.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime::report {
namespace {

TEST(DownsampleMinMax, ShortSeriesComeBackWhole) {
  const std::vector<double> t{0, 1, 2, 3}, v{5, 1, 7, 2};
  const Downsampled d = downsample_min_max(t, v, 2);
  EXPECT_FALSE(d.reduced);
  EXPECT_EQ(d.input_points, 4u);
  EXPECT_EQ(d.t_s, t);
  EXPECT_EQ(d.value, v);
}

TEST(DownsampleMinMax, KeepsEveryColumnsExtremesInTimeOrder) {
  // 100 000 points of a sine with one spike and one dip that a plain stride would miss.
  std::vector<double> t, v;
  for (int i = 0; i < 100000; ++i) {
    t.push_back(i * 0.001);
    v.push_back(300 + 50 * std::sin(i * 0.01));
  }
  v[12345] = 900;
  v[67891] = 10;
  const Downsampled d = downsample_min_max(t, v, 500);
  EXPECT_TRUE(d.reduced);
  EXPECT_EQ(d.input_points, 100000u);
  EXPECT_LE(d.t_s.size(), 1000u);
  EXPECT_GE(d.t_s.size(), 900u);
  EXPECT_TRUE(std::is_sorted(d.t_s.begin(), d.t_s.end()));
  EXPECT_EQ(*std::max_element(d.value.begin(), d.value.end()), 900);
  EXPECT_EQ(*std::min_element(d.value.begin(), d.value.end()), 10);
  EXPECT_DOUBLE_EQ(d.t_s.front(), 0);
  // The last point of the series lies in the last column, so the line reaches the end.
  EXPECT_GE(d.t_s.back(), t[t.size() - 200]);
}

TEST(DownsampleMinMax, AGapInTheRecordingLeavesEmptyColumnsOut) {
  std::vector<double> t, v;
  for (int i = 0; i < 50; ++i) t.push_back(i), v.push_back(i);
  for (int i = 0; i < 50; ++i) t.push_back(1000 + i), v.push_back(i);
  const Downsampled d = downsample_min_max(t, v, 20);
  EXPECT_TRUE(d.reduced);
  EXPECT_TRUE(
      std::none_of(d.t_s.begin(), d.t_s.end(), [](double x) { return x > 49 && x < 1000; }));
  EXPECT_EQ(d.value.front(), 0);
  EXPECT_EQ(d.value.back(), 49);
}

TEST(DownsampleMinMax, RefusesZeroColumnsAndMismatchedInput) {
  EXPECT_THROW(downsample_min_max({0, 1}, {1, 2}, 0), Error);
  EXPECT_THROW(downsample_min_max({0, 1}, {1}, 10), Error);
}

}  // namespace
}  // namespace regime::report
