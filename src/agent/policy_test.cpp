#include "agent/policy.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::agent {
namespace {

NameResolver names() {
  return {[](const std::string& n) -> std::optional<uint32_t> {
            if (n == "alice") return 1001;
            if (n == "slurm") return 64030;
            return std::nullopt;
          },
          [](const std::string& n) -> std::optional<uint32_t> {
            if (n == "gpu-users") return 2000;
            return std::nullopt;
          }};
}

std::string parse_error(const std::string& text) {
  try {
    parse_policy(text, "regimed.policy", names());
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    return e.what();
  }
  return "no error";
}

TEST(AgentPolicy, ParsesEveryRuleWithItsLine) {
  Policy p = parse_policy(
      "# comment\n"
      "admin user slurm\n"
      "\n"
      "allow group gpu-users gpus all   # trailing comment\n"
      "allow user alice gpus 0,GPU-abc min_W 300\n"
      "bounds \"NVIDIA H200\" min_W 350 max_W 700\n"
      "bounds * min_W 150\n",
      "regimed.policy", names());
  ASSERT_EQ(p.admins.size(), 1u);
  EXPECT_EQ(p.admins[0].id, 64030u);
  ASSERT_EQ(p.allow.size(), 2u);
  EXPECT_TRUE(p.allow[0].all_gpus);
  EXPECT_EQ(p.allow[0].who.kind, Principal::Kind::Group);
  EXPECT_EQ(p.allow[0].line, 4);
  EXPECT_EQ(p.allow[1].gpus, (std::vector<std::string>{"0", "GPU-abc"}));
  EXPECT_EQ(p.allow[1].min_W, 300);
  EXPECT_FALSE(p.allow[1].max_W);
  ASSERT_EQ(p.bounds.size(), 2u);
  EXPECT_EQ(p.bounds[0].model, "NVIDIA H200");
  EXPECT_EQ(p.bounds[0].line, 6);
  EXPECT_EQ(bounds_for_model(p, "NVIDIA H200")->max_W, 700);
  EXPECT_EQ(bounds_for_model(p, "NVIDIA A100")->model, "*");
}

TEST(AgentPolicy, NumericIdsNeedNoLookup) {
  Policy p = parse_policy("allow user 4242 gpus 1\nadmin group 77\n", "f", names());
  EXPECT_EQ(p.allow[0].who.id, 4242u);
  EXPECT_EQ(p.admins[0].id, 77u);
}

TEST(AgentPolicy, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(parse_error("admin user slurm\nalow user alice gpus all\n"),
            "regimed.policy:2: unknown rule 'alow' (expected admin, allow or bounds)");
  EXPECT_EQ(parse_error("\n\nallow user bob gpus all"),
            "regimed.policy:3: no user named 'bob' on this system");
  EXPECT_EQ(parse_error("allow user alice gpus"),
            "regimed.policy:1: allow needs 'gpus all' or 'gpus LIST' (indexes or UUIDs, "
            "comma-separated)");
  EXPECT_EQ(parse_error("allow user alice gpus 0,,1"),
            "regimed.policy:1: empty GPU in the list '0,,1'");
  EXPECT_EQ(parse_error("bounds \"NVIDIA H200 min_W 3"), "regimed.policy:1: a quote is not closed");
  EXPECT_EQ(parse_error("bounds * min_W 500 max_W 400"),
            "regimed.policy:1: min_W 500 is above max_W 400");
  EXPECT_EQ(parse_error("bounds * min_W -3"),
            "regimed.policy:1: min_W must be a number of watts above 0, not '-3'");
  EXPECT_EQ(parse_error("bounds * min_W 1e999"),
            "regimed.policy:1: min_W must be a number of watts above 0, not '1e999'");
  EXPECT_EQ(parse_error("bounds *"), "regimed.policy:1: bounds needs min_W, max_W or both");
  EXPECT_EQ(parse_error("bounds * max_W 500\nbounds * max_W 600"),
            "regimed.policy:2: bounds for '*' are already on line 1");
  EXPECT_EQ(parse_error("admin person slurm"),
            "regimed.policy:1: expected 'user' or 'group' after 'admin', not 'person'");
  EXPECT_EQ(parse_error("allow user alice gpus all watts 3"),
            "regimed.policy:1: unexpected 'watts' (expected min_W or max_W)");
}

TEST(AgentPolicy, WhoMatchesWhat) {
  Policy p = parse_policy(
      "admin user slurm\nallow group gpu-users gpus 1\nallow user alice gpus GPU-x max_W 400\n",
      "f", names());
  Peer root{1, 0, 0, {0}};
  Peer slurm{2, 64030, 64030, {64030}};
  Peer alice{3, 1001, 1001, {1001, 2000}};
  Peer bob{4, 1002, 1002, {1002}};
  EXPECT_TRUE(is_admin(p, root));
  EXPECT_TRUE(is_admin(p, slurm));
  EXPECT_FALSE(is_admin(p, alice));
  EXPECT_EQ(matching_rules(p, alice, "1", "GPU-y").size(), 1u);  // by group
  EXPECT_EQ(matching_rules(p, alice, "0", "GPU-x").size(), 1u);  // by UUID
  EXPECT_EQ(matching_rules(p, alice, "0", "GPU-z").size(), 0u);
  EXPECT_EQ(matching_rules(p, bob, "1", "GPU-x").size(), 0u);
}

}  // namespace
}  // namespace regime::agent
