#include "session/sim/sim_fit.hpp"

#include <gtest/gtest.h>

#include "cli/sim_options.hpp"
#include "common/error.hpp"

namespace regime::session {
namespace {

TEST(SimFit, TheCurveModelIsNamedAndAnUnknownOneRefused) {
  EXPECT_EQ(cli::parse_curve_model("twin"), twin::CurveModel::Twin);
  EXPECT_EQ(cli::parse_curve_model("quadratic"), twin::CurveModel::Quadratic);
  EXPECT_EQ(cli::parse_curve_model("cube"), twin::CurveModel::CubeLaw);
  try {
    cli::parse_curve_model("cubic");
    FAIL() << "cubic is no model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_STREQ(e.what(), "--model must be twin, quadratic or cube, got 'cubic'");
  }
}

}  // namespace
}  // namespace regime::session
