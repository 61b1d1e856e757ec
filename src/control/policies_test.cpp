// Controller policies by name: what `--policy NAME[:k=v,...]` builds for one GPU.
#include "control/policies.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::control {
namespace {

GpuInfo h200() {
  GpuInfo info;
  info.name = "NVIDIA H200";
  info.min_limit_W = 200;
  info.max_limit_W = 700;
  info.default_limit_W = 700;
  info.slowdown_temp_C = 87;
  return info;
}

TEST(ControllerPolicies, ThermalIsMadeByNameWithTheCardsDefaultsAndTheSpecsKeys) {
  const PolicySetup s = make_policy(parse_policy("thermal:step_W=20"), h200(), 40.0);
  ASSERT_NE(s.controller, nullptr);
  EXPECT_EQ(s.controller->name(), "thermal");
  EXPECT_DOUBLE_EQ(s.bounds.min_W, 200);
  EXPECT_DOUBLE_EQ(s.bounds.max_W, 700);
  EXPECT_DOUBLE_EQ(s.bounds.max_step_W, 20);
  EXPECT_DOUBLE_EQ(s.dwell_s, 40);                              // the card's thermal time constant
  EXPECT_DOUBLE_EQ(s.params.at("target_C").get<double>(), 82);  // 5 C under slowdown
  EXPECT_DOUBLE_EQ(s.params.at("step_W").get<double>(), 20);
  EXPECT_NE(s.params_text.find("step 20 W"), std::string::npos) << s.params_text;
}

TEST(ControllerPolicies, AnUnknownNameIsRefusedNamingThePolicies) {
  EXPECT_EQ(find_policy("pid"), nullptr);
  ASSERT_NE(find_policy("thermal"), nullptr);
  try {
    make_policy(parse_policy("pid:kp=1"), h200(), std::nullopt);
    FAIL() << "pid is no policy";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("thermal"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_policy(parse_policy("thermal:colour=blue"), h200(), std::nullopt), Error);
}

TEST(PhasePolicy, IsMadeByNameAndRefusesBadParameters) {
  const PolicySetup s = make_policy(parse_policy("phase:caps=5,learn_s=120"), h200(), 20.0);
  EXPECT_EQ(s.controller->name(), "phase");
  EXPECT_DOUBLE_EQ(s.controller->learn_s(), 120);
  EXPECT_DOUBLE_EQ(s.bounds.min_W, 200);
  EXPECT_DOUBLE_EQ(s.bounds.max_W, 700);
  EXPECT_EQ(s.params.at("caps").get<int>(), 5);
  EXPECT_THROW(make_policy(parse_policy("phase:colour=blue"), h200(), std::nullopt), Error);
  EXPECT_THROW(make_policy(parse_policy("phase:caps=1"), h200(), std::nullopt), Error);
  EXPECT_THROW(make_policy(parse_policy("phase:learn_s=20,observe_s=30"), h200(), std::nullopt),
               Error);
}

}  // namespace
}  // namespace regime::control
