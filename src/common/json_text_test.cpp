#include "common/json_text.hpp"

#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"

namespace regime {
namespace {

std::string nested(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(JsonText, NestingIsCountedOutsideStringsOnly) {
  EXPECT_EQ(json_nesting_depth(R"({"a":[1,{"b":2}]})"), 3u);
  EXPECT_EQ(json_nesting_depth(R"({"a":"[[[[{{{{\"]]]"})"), 1u);
  EXPECT_EQ(json_nesting_depth("300"), 0u);
}

TEST(JsonText, ADeepTextStopsBeingCountedPastTheLimit) {
  EXPECT_EQ(json_nesting_depth(nested(1'000'000), 64), 65u);
}

TEST(JsonText, NestingWithinTheBoundParses) {
  nlohmann::json j = parse_json_or_discarded(nested(kMaxJsonDepth));
  EXPECT_FALSE(j.is_discarded());
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth), "f.json"));
}

TEST(JsonText, NestingBeyondTheBoundIsRefusedBeforeAnyWalkOverIt) {
  const std::string deep = nested(100'000);
  EXPECT_TRUE(parse_json_or_discarded(deep).is_discarded());
  try {
    parse_json(deep, "f.json");
    FAIL() << "a text nested 100,000 levels deep was parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_NE(std::string(e.what()).find("f.json: nested deeper than 64 levels"), std::string::npos)
        << e.what();
  }
}

TEST(JsonText, TextThatIsNotJsonIsDiscarded) {
  EXPECT_TRUE(parse_json_or_discarded(R"({"cap_W":)").is_discarded());
  EXPECT_TRUE(parse_json_or_discarded(R"({"cap_W":NaN})").is_discarded());
}

}  // namespace
}  // namespace regime
