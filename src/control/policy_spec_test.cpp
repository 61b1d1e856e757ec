#include "control/policy_spec.hpp"

#include <gtest/gtest.h>

#include "support/error_of.hpp"

namespace regime::control {
namespace {

using test::error_of;

TEST(PolicySpec, ReadsTheNameAndTrimmedParameters) {
  const PolicySpec s = parse_policy(" phase : observe_s = 20 ,caps=300/250, ");
  EXPECT_EQ(s.name, "phase");
  EXPECT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params.at("observe_s"), "20");
  EXPECT_EQ(s.params.at("caps"), "300/250");
  EXPECT_EQ(s.text, " phase : observe_s = 20 ,caps=300/250, ");
  EXPECT_DOUBLE_EQ(*number_param(s, "observe_s"), 20);
  EXPECT_FALSE(number_param(s, "learn_s").has_value());
  EXPECT_NE(error_of([&] { number_param(s, "caps"); }).find("caps='300/250' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of([] { number_param(parse_policy("p:x=inf"), "x"); }).find("not a number"),
            std::string::npos);
}

TEST(PolicySpec, AnUnknownParameterIsNamedWithTheKnownOnesInTheirOrder) {
  const PolicySpec s = parse_policy("phase:observe_s=20,learn=5");
  EXPECT_EQ(error_of([&] {
              require_known_params(s, {"observe_s", "learn_s"});
            }),
            "--policy phase: unknown parameter 'learn' (known: observe_s, learn_s)");
  EXPECT_EQ(error_of([&] { require_known_params(s, {"observe_s", "learn"}); }), "");
}

}  // namespace
}  // namespace regime::control
