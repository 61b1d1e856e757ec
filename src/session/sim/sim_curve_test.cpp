#include "session/sim/sim_curve.hpp"

#include <gtest/gtest.h>

#include "cli/sim_options.hpp"
#include "common/error.hpp"
#include "session/sim/sim_curve_view.hpp"

namespace regime::session {
namespace {

TEST(SimCurve, CapsArePositiveWattsAndABadOneIsNamed) {
  EXPECT_EQ(cli::parse_caps("60,64.5,70"), (std::vector<double>{60, 64.5, 70}));
  for (const char* bad : {"60,x", "60,-1", "0", "60W", "60,,70"}) {
    try {
      cli::parse_caps(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("is not a positive number of watts"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(cli::parse_caps(""), Error);
}

TEST(SimCurve, AShutdownPointHasNoTimePowerOrEnergy) {
  SimCurve c{"t4", "Tesla T4", "resnet50", 96, {}, {}};
  c.points.push_back({60, {}, {}, "SW power cap"});
  c.points[0].state.shutdown = true;
  c.points.push_back({70, {}, {}, "SW power cap"});
  c.points[1].state.energy_J = 10;
  c.points[1].uncertainty.half_width_rel = 0.1;
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["gpu"], "t4");
  EXPECT_EQ(j["points"][0]["cap_W"], 60.0);
  EXPECT_TRUE(j["points"][0]["energy_J"].is_null());
  EXPECT_TRUE(j["points"][0]["distance_from_calibrated_W"].is_null());
  EXPECT_DOUBLE_EQ(j["points"][1]["energy_interval_J"][0].get<double>(), 9);
  EXPECT_DOUBLE_EQ(j["points"][1]["energy_interval_J"][1].get<double>(), 11);
}

TEST(SimCurve, TheExtrapolationNoteNamesTheCalibratedCapsOrTheirAbsence) {
  SimCurve c{"h200", "NVIDIA H200", "resnet50", 90, {700}, {}};
  c.points.push_back({700, {}, {}, ""});
  EXPECT_EQ(extrapolation_note(c), "");
  c.points.push_back({245, {}, {}, ""});
  c.points[1].uncertainty.extrapolated = true;
  EXPECT_EQ(extrapolation_note(c),
            "* extrapolated: outside the caps the h200 twin was calibrated at (700 W); +-% grows "
            "with the distance from them");
  c.calibrated_caps_W.clear();
  EXPECT_EQ(extrapolation_note(c), "* extrapolated: h200 has no calibrated cap (docs/twin.md)");
}

TEST(SimCurve, ACapOutsideTheGpusRangeIsRefused) {
  EXPECT_NO_THROW(sim_curve("t4", "resnet50", cli::parse_caps("60,70")));
  try {
    sim_curve("t4", "resnet50", cli::parse_caps("50"));
    FAIL() << "50 W is below a T4's range";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
  }
}

}  // namespace
}  // namespace regime::session
