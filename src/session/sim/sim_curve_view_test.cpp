// The sim curve's two presenters: each cap's row of the table shows the energy, time and +-% its
// JSON point holds.
#include "session/sim/sim_curve_view.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "cli/sim_options.hpp"
#include "session/sim/sim_curve.hpp"

namespace regime::session {
namespace {

TEST(SimCurveView, EachRowShowsTheEnergyAndTimeOfItsJsonPoint) {
  const SimCurve curve = sim_curve("t4", "resnet50", cli::parse_caps("60,64,70"));
  const nlohmann::json j = to_json(curve);
  const std::string text = to_text(curve);
  ASSERT_EQ(j["points"].size(), 3u);
  for (const nlohmann::json& p : j["points"]) {
    const std::string row =
        fmt::format("{:>8.1f} {:>10.3f} {:>10.1f} {:>10.3f} {:>6.0f}", p["cap_W"].get<double>(),
                    1e3 * p["time_s"].get<double>(), p["avg_power_W"].get<double>(),
                    p["energy_J"].get<double>(), p["half_width_pct"].get<double>());
    EXPECT_NE(text.find(row), std::string::npos) << row << "\n" << text;
  }
  EXPECT_EQ(text.rfind("resnet50 on ", 0), 0u) << text;
}

TEST(SimCurveView, AShutdownPointSaysSoInsteadOfFigures) {
  SimCurve c{"t4", "Tesla T4", "resnet50", 96, {70}, {}};
  c.points.push_back({60, {}, {}, "SW power cap"});
  c.points[0].state.shutdown = true;
  EXPECT_TRUE(to_json(c)["points"][0]["energy_J"].is_null());
  EXPECT_NE(
      to_text(c).find("    60.0  shuts down: the die reaches its shutdown temperature 96 C\n"),
      std::string::npos)
      << to_text(c);
}

}  // namespace
}  // namespace regime::session
