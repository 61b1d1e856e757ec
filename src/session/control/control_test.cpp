// The regime gate of `regime control`: which probes let the thermal controller in, and the
// reason given for each that does not.
#include "session/control/control.hpp"

#include <gtest/gtest.h>

#include "session/control/control_steps.hpp"

namespace regime::session {
namespace {

RegimeReport report(Regime r, double avg_power_W) {
  RegimeReport rep;
  rep.regime = r;
  rep.measurement.avg_power_W = avg_power_W;
  return rep;
}

TEST(ControlGate, EngagesOnlyOnAThermalBoundPairWhoseLimitCanBind) {
  GpuInfo info;
  info.min_limit_W = 200;
  info.default_limit_W = 700;
  EXPECT_EQ(gate_reason(report(Regime::ThermalBound, 540), info), "");
  EXPECT_NE(gate_reason(report(Regime::ThermalBound, 150), info).find("under the lowest limit"),
            std::string::npos);
  EXPECT_EQ(gate_reason(report(Regime::CapBound, 700), info),
            "cap-bound: the firmware already holds power at the limit; temperature control "
            "cannot lower energy per step");
  for (Regime r : {Regime::Headroom, Regime::Underutilized, Regime::Idle}) {
    std::string why = gate_reason(report(r, 300), info);
    EXPECT_EQ(why.rfind(to_string(r), 0), 0u) << why;  // names the regime first
  }
}

}  // namespace
}  // namespace regime::session
