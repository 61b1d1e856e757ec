#include "report/sweep.hpp"

#include <gtest/gtest.h>

namespace regime::report {
namespace {

plan::ProbeResult at(double cap_W, double energy_J, double time_s) {
  plan::ProbeResult p;
  p.cap_W = cap_W;
  p.measurement.energy_per_step_J = energy_J;
  p.measurement.energy_per_step_ci_J = {energy_J - 0.5, energy_J + 0.5};
  p.measurement.time_per_step_s = time_s;
  p.measurement.time_per_step_ci_s = {time_s * 0.99, time_s * 1.01};
  p.measurement.steps = 100;
  return p;
}

TEST(ReportSweep, PointsAscendByCapWithIntervalsAndTheDecision) {
  plan::Decision d;
  d.cap_W = 500;
  d.keep_default = false;
  d.energy_change_pct = -12;
  d.reason = "saves energy";
  // Measured in search order, 600 W twice: the last measurement of a cap is the one shown.
  d.time_change_pct = 10;
  d.basis = "intervals";
  const std::vector<plan::ProbeResult> probes = {at(700, 40, 0.05), at(500, 35, 0.055),
                                                 at(600, 39, 0.051), at(600, 37, 0.052)};
  const plan::DecisionView view =
      plan::decision_view(d, probes, plan::parse_objective("max-slowdown:10"), 700, "step");
  const nlohmann::json s = sweep_section(probes, d, view);
  ASSERT_EQ(s["points"].size(), 3u);
  EXPECT_EQ(s["probes"], 4);
  EXPECT_EQ(s["points"][0]["cap_W"], 500.0);
  EXPECT_EQ(s["points"][1]["cap_W"], 600.0);
  EXPECT_EQ(s["points"][1]["energy_per_step_J"], 37.0);
  EXPECT_EQ(s["points"][2]["energy_per_step_ci_J"], nlohmann::json({39.5, 40.5}));
  EXPECT_EQ(s["decision"]["cap_W"], 500.0);
  EXPECT_FALSE(s["decision"]["keep_default"].get<bool>());
  EXPECT_EQ(s["default_limit_W"], 700.0);
  // The page prints the view's figures: the decision's change with its interval, and the time
  // bound that only the point estimate meets (+10% [+8.9, +11.1]).
  EXPECT_EQ(s["decision"]["energy_change_pct"], -12.0);
  ASSERT_TRUE(s["decision"]["time_change_ci_pct"].is_array());
  EXPECT_NEAR(s["decision"]["time_change_ci_pct"][1].get<double>(), 100 * (1.01 / 0.99 * 1.1 - 1),
              1e-9);
  EXPECT_TRUE(s["decision"]["only_point_estimate_meets_time_bound"].get<bool>());
  // A saving not called beyond the noise says so, for the page's "Certainty:" line.
  EXPECT_FALSE(s["decision"]["saving_beyond_noise"].get<bool>());
  EXPECT_NE(s["decision"]["certainty"].get<std::string>().find("within the noise"),
            std::string::npos);
}

}  // namespace
}  // namespace regime::report
