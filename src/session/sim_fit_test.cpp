#include "session/sim_fit.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::session {
namespace {

TEST(SimFit, TheCurveModelIsNamedAndAnUnknownOneRefused) {
  EXPECT_EQ(parse_curve_model("twin"), twin::CurveModel::Twin);
  EXPECT_EQ(parse_curve_model("quadratic"), twin::CurveModel::Quadratic);
  EXPECT_EQ(parse_curve_model("cube"), twin::CurveModel::CubeLaw);
  try {
    parse_curve_model("cubic");
    FAIL() << "cubic is no model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_STREQ(e.what(), "--model must be twin, quadratic or cube, got 'cubic'");
  }
}

TEST(SimFit, AFigureWithNothingHeldOutIsNull) {
  twin::SweepFitReport r;
  r.workloads.push_back({});
  r.workloads[0].workload = "bert";
  r.workloads[0].mape_time_pct = 2.5;
  const nlohmann::json j = fit_json(r);
  EXPECT_EQ(j["workloads"][0]["workload"], "bert");
  EXPECT_TRUE(j["workloads"][0]["mape_energy_pct"].is_null());
  EXPECT_EQ(j["workloads"][0]["mape_time_pct"], 2.5);
  EXPECT_TRUE(j["median_mape_energy_pct"].is_null());
}

}  // namespace
}  // namespace regime::session
