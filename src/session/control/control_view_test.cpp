// The control report's two presenters: the text and the JSON of one report show the same figures.
#include "session/control/control_view.hpp"

#include <gtest/gtest.h>

#include "session/control/control.hpp"

namespace regime::session {
namespace {

ControlReport gated_run() {
  ControlReport r;
  r.device = "sim:l4";
  r.workload = "sim:resnet50";
  r.policy = "regime-gated";
  r.info.name = "NVIDIA L4";
  r.duration_s = 600;
  r.simulated = true;
  RegimeReport probe;
  probe.regime = Regime::ThermalBound;
  probe.confidence = 0.87;
  r.probe = probe;
  r.probe_s = 60;
  r.engaged = true;
  r.reason = "thermal-bound";
  r.controller = "thermal";
  r.controller_text = "target 80 C";
  r.actions.push_back({.t_s = 75,
                       .temp_C = 83.5,
                       .power_W = 71.2,
                       .old_limit_W = 72,
                       .new_limit_W = 66,
                       .why = "above the band",
                       .applied = true});
  r.measurement.energy_per_step_J = 12.345;
  r.measurement.energy_per_step_ci_J = {12.1, 12.6};
  r.measurement.time_per_step_s = 0.4321;
  r.measurement.time_per_step_ci_s = {0.43, 0.434};
  r.measurement.steps = 1234;
  r.limit_before_W = 72;
  r.limit_after_W = 72;
  r.stored_id = 7;
  return r;
}

TEST(ControlView, TextAndJsonShowTheSameRunFigures) {
  const ControlReport r = gated_run();
  const nlohmann::json j = to_json(r);
  const std::string text = to_text(r);
  EXPECT_EQ(j["regime"], "thermal-bound");
  EXPECT_NE(text.find("probe (60 s): thermal-bound (confidence 0.87)"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(j["energy_per_step_J"].get<double>(), 12.345);
  EXPECT_DOUBLE_EQ(j["time_per_step_s"].get<double>(), 0.4321);
  EXPECT_NE(text.find("energy per step 12.345 J [12.100, 12.600], time per step 0.4321 s"),
            std::string::npos)
      << text;
  EXPECT_EQ(j["actions"][0]["limit_W"], 66);
  EXPECT_NE(text.find("limit 72 -> 66 W  (above the band)"), std::string::npos) << text;
  EXPECT_EQ(j["stored_as"], "control:7");
  EXPECT_NE(text.find("kept as control:7"), std::string::npos) << text;
}

}  // namespace
}  // namespace regime::session
