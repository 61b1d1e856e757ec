// A stored decision is read whole before a cap is set from it: each hostile form gives a reason
// naming what is wrong, never an exception.
#include "session/scheduler/stored_decision.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace regime::session {
namespace {

using Kind = StoredDecision::Kind;

GpuInfo h200() {
  GpuInfo g;
  g.name = "NVIDIA H200";
  g.device = "nvml:0";
  g.min_limit_W = 200;
  g.max_limit_W = 700;
  g.default_limit_W = 700;
  return g;
}

nlohmann::json capped(nlohmann::json cap) {
  return {{"keep_default", false}, {"cap_W", std::move(cap)}, {"energy_change_pct", -8.3}};
}

TEST(StoredDecision, AWholeDecisionGivesItsCapOrTheDefault) {
  StoredDecision d = read_stored_decision(capped(450), h200());
  EXPECT_EQ(d.kind, Kind::Cap);
  EXPECT_DOUBLE_EQ(d.cap_W, 450);
  EXPECT_DOUBLE_EQ(*d.energy_change_pct, -8.3);
  EXPECT_FALSE(d.time_change_pct);
  // A figure the decision could not measure is stored as null: still a whole decision.
  nlohmann::json with_null = capped(450);
  with_null["time_change_pct"] = nullptr;
  EXPECT_EQ(read_stored_decision(with_null, h200()).kind, Kind::Cap);
  EXPECT_EQ(read_stored_decision({{"keep_default", true}, {"cap_W", 700}}, h200()).kind,
            Kind::KeepDefault);
  // The range's own ends are caps.
  EXPECT_EQ(read_stored_decision(capped(200), h200()).kind, Kind::Cap);
  EXPECT_EQ(read_stored_decision(capped(700), h200()).kind, Kind::Cap);
}

TEST(StoredDecision, EachHostileFormIsUnusableWithItsReason) {
  struct Case {
    nlohmann::json decision;
    std::string reason;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {capped("300"), "cap_W is a string (\"300\"), not a number"},
      {capped(nullptr), "cap_W is null, not a number"},
      {capped(true), "cap_W is a boolean (true), not a number"},
      {capped({300}), "cap_W is an array ([300]), not a number"},
      {capped({{"W", 300}}), "cap_W is an object ({\"W\":300}), not a number"},
      {capped(inf), "cap_W is not a finite number"},
      {capped(-inf), "cap_W is not a finite number"},
      {capped(std::numeric_limits<double>::quiet_NaN()), "cap_W is not a finite number"},
      {capped(1), "cap 1 W is outside the range of nvml:0 (200-700 W)"},
      {capped(1e9), "cap 1e+09 W is outside the range of nvml:0 (200-700 W)"},
      {capped(-5), "cap -5 W is outside the range of nvml:0 (200-700 W)"},
      {capped(0), "cap 0 W is outside the range of nvml:0 (200-700 W)"},
      {{{"keep_default", false}}, "cap_W is missing"},
      {{{"cap_W", 300}}, "its decision has no keep_default"},
      {{{"keep_default", "false"}, {"cap_W", 300}},
       "keep_default is a string (\"false\"), not true or false"},
      {{{"keep_default", 0}, {"cap_W", 300}}, "keep_default is a number (0), not true or false"},
      {{{"keep_default", false}, {"cap_W", 300}, {"energy_change_pct", "-8%"}},
       "energy_change_pct is a string (\"-8%\"), not a number"},
      {{{"keep_default", true}, {"time_change_pct", {1, 2}}},
       "time_change_pct is an array ([1,2]), not a number"},
      {nlohmann::json::array({300}), "its decision is an array ([300]), not an object"},
      {300, "its decision is a number (300), not an object"},
      {"cap 300", "its decision is a string (\"cap 300\"), not an object"},
      {nullptr, "no decision is stored with it"},
  };
  for (const Case& c : cases) {
    StoredDecision d;
    ASSERT_NO_THROW(d = read_stored_decision(c.decision, h200())) << c.decision.dump();
    EXPECT_EQ(d.kind, Kind::Unusable) << c.decision.dump();
    EXPECT_EQ(d.reason, c.reason) << c.decision.dump();
  }
}

TEST(StoredDecision, AReasonShowsControlCharactersEscapedAndLongValuesCut) {
  const StoredDecision d =
      read_stored_decision(capped("a\nb\x1b[2J" + std::string(80, 'x')), h200());
  EXPECT_EQ(d.reason.find('\n'), std::string::npos) << d.reason;
  EXPECT_EQ(d.reason.find('\x1b'), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("...)"), std::string::npos) << d.reason;
  EXPECT_LT(d.reason.size(), 100u) << d.reason;
}

}  // namespace
}  // namespace regime::session
