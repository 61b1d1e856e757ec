#include "twin/uncertainty.hpp"

#include <gtest/gtest.h>

namespace regime::twin {
namespace {

// sim:h200 is calibrated at 700 W only: its 245 W figure is an extrapolation with a wide interval.
TEST(TwinUncertainty, GrowsWithTheDistanceFromTheCalibratedCaps) {
  const GpuSpec h200 = load_gpu_spec("h200");
  ASSERT_EQ(h200.calibrated_caps_W, std::vector<double>{700});
  const Uncertainty at700 = spec_uncertainty(h200, 700), at690 = spec_uncertainty(h200, 690),
                    at245 = spec_uncertainty(h200, 245);
  EXPECT_DOUBLE_EQ(at700.half_width_rel, h200.calibration_error_pct / 100);
  EXPECT_FALSE(at700.extrapolated);
  EXPECT_FALSE(at690.extrapolated) << "within 5 % of the range";
  EXPECT_TRUE(at245.extrapolated);
  EXPECT_DOUBLE_EQ(at245.distance_W, 455);
  EXPECT_NEAR(at245.half_width_rel, 0.10 + kIntervalGrowthPerRange * 455 / 500, 1e-12);
  EXPECT_LT(at690.half_width_rel, at245.half_width_rel);
  EXPECT_NEAR(at245.lo(100), 100 * (1 - at245.half_width_rel), 1e-12);
}

TEST(TwinUncertainty, InsideTheCalibratedSpanIsNotExtrapolated) {
  const GpuSpec t4 = load_gpu_spec("t4");  // calibrated at 60, 64 and 70 W
  for (double cap : {60.0, 62.0, 67.0, 70.0}) EXPECT_FALSE(spec_uncertainty(t4, cap).extrapolated);
  EXPECT_NEAR(spec_uncertainty(t4, 62).distance_W, 2, 1e-12);
}

TEST(TwinUncertainty, AnUncalibratedSpecIsExtrapolatedEverywhere) {
  const GpuSpec a100 = load_gpu_spec("a100");
  ASSERT_TRUE(a100.calibrated_caps_W.empty());
  const Uncertainty u = spec_uncertainty(a100, a100.default_limit_W);
  EXPECT_FALSE(u.calibrated);
  EXPECT_TRUE(u.extrapolated);
  EXPECT_DOUBLE_EQ(u.half_width_rel, kUncalibratedRel);
}

}  // namespace
}  // namespace regime::twin
