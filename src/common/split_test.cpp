#include "common/split.hpp"

#include <gtest/gtest.h>

namespace regime {
namespace {

TEST(SplitFields, KeepsEmptyFieldsAtBothEndsAndBetween) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_fields("/usr/bin:/bin", ':'), (V{"/usr/bin", "/bin"}));
  EXPECT_EQ(split_fields(":a::b:", ':'), (V{"", "a", "", "b", ""}));
  EXPECT_EQ(split_fields("", ','), (V{""}));
  EXPECT_EQ(split_fields("60", ','), (V{"60"}));
}

}  // namespace
}  // namespace regime
