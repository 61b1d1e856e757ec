#include "run/step_marker.hpp"

#include <gtest/gtest.h>

namespace regime {
namespace {

TEST(StepMarker, ParsesAStepDatagram) {
  auto p = parse_step_datagram("step 12 1795977956.134705 1795977956.200264\n");
  ASSERT_TRUE(p.step) << p.error;
  EXPECT_EQ(p.step->step, 12);
  EXPECT_DOUBLE_EQ(p.step->t_start_s, 1795977956.134705);
  EXPECT_DOUBLE_EQ(p.step->t_end_s, 1795977956.200264);
}

TEST(StepMarker, RoundTripsThroughTheFormatTheHelperSends) {
  Step s{7, 1700000000.25, 1700000000.5};
  auto p = parse_step_datagram(format_step_datagram(s));
  ASSERT_TRUE(p.step);
  EXPECT_EQ(p.step->step, 7);
  EXPECT_NEAR(p.step->t_start_s, 1700000000.25, 1e-6);
  EXPECT_NEAR(p.step->t_end_s, 1700000000.5, 1e-6);
}

TEST(StepMarker, RefusesMalformedDatagramsSayingWhy) {
  for (const char* bad : {"", "step", "step 1 2", "mark 1 2 3", "step -1 1 2", "step x 1 2",
                          "step 1 a 2", "step 1 2 1", "step 1 1 2 extra", "step 1 nan 2"}) {
    auto p = parse_step_datagram(bad);
    EXPECT_FALSE(p.step) << bad;
    EXPECT_NE(p.error.find("expected 'step <n> <t_start_s> <t_end_s>'"), std::string::npos) << bad;
  }
  EXPECT_NE(parse_step_datagram("step 1 2 1").error.find("t_end before t_start"),
            std::string::npos);
}

}  // namespace
}  // namespace regime
