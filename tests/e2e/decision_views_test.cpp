// One decision, every view, through the binary: the study's and the sweep's headline, interval
// line, table and JSON show the same cap and the same changes, and `regime recommend --sweep` of
// the sweep's own --table-out decides as `regime recommend --run sweep:ID` and the sweep did.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/sandbox.hpp"
#include "support/text_table.hpp"

namespace regime {
namespace {

using nlohmann::json;

// The figures one text view prints of the decision.
struct Shown {
  double cap_W = 0;
  std::string energy_pct, time_pct;  // "-7.6"
};

// "decision: 60 W (energy per step -7.6%, time per step +8.6%)"
std::optional<Shown> headline(const std::string& text) {
  static const std::regex re(
      R"(decision: ([0-9.]+) W \(energy per \w+ ([-+][0-9.]+)%, time per \w+ ([-+][0-9.]+)%\))");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  return Shown{std::stod(m[1]), m[2], m[3]};
}

// "change: energy per step -7.6% [-8.4, -6.7], time per step +8.6% [+7.2, +10.8] ..."
std::optional<Shown> interval_line(const std::string& text) {
  static const std::regex re(
      R"(change: energy per \w+ ([-+][0-9.]+)% \[[-+0-9., ]+\], time per \w+ ([-+][0-9.]+)% \[[-+0-9.]+, ([-+0-9.]+)\])");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  return Shown{0, m[1], m[2]};
}

// The table's dE and dT at `cap_W`.
std::optional<Shown> table_row(const std::string& text, double cap_W) {
  const auto c = test::row_cells(text, fmt::format("{:.1f}", cap_W));
  if (c.size() < 7) return std::nullopt;
  return Shown{cap_W, c[c.size() - 3], c[c.size() - 2]};
}

std::string pct1(const json& v) { return fmt::format("{:+.1f}", v.get<double>()); }

// Every text view of one decision shows what its JSON holds.
void expect_text_views_agree(const std::string& text, const json& decision) {
  ASSERT_FALSE(decision["keep_default"].get<bool>()) << decision.dump(1);
  const double cap_W = decision["cap_W"].get<double>();
  const std::string e = pct1(decision["energy_change_pct"]);
  const std::string t = pct1(decision["time_change_pct"]);
  const auto h = headline(text);
  ASSERT_TRUE(h.has_value()) << text;
  EXPECT_EQ(h->cap_W, cap_W) << text;
  EXPECT_EQ(h->energy_pct, e) << text;
  EXPECT_EQ(h->time_pct, t) << text;
  const auto i = interval_line(text);
  ASSERT_TRUE(i.has_value()) << text;
  EXPECT_EQ(i->energy_pct, e) << text;
  EXPECT_EQ(i->time_pct, t) << text;
  const auto r = table_row(text, cap_W);
  ASSERT_TRUE(r.has_value()) << text;
  EXPECT_EQ(r->energy_pct, e) << text;
  EXPECT_EQ(r->time_pct, t) << text;
  // An interval reaching past the time bound is said in words, in the text and the JSON.
  const bool only_point = decision["only_point_estimate_meets_time_bound"].get<bool>();
  EXPECT_EQ(text.find("only the point estimate meets") != std::string::npos, only_point) << text;
  if (decision["time_change_ci_pct"].is_array() && decision["max_slowdown_pct"].is_number()) {
    EXPECT_EQ(only_point, decision["time_change_ci_pct"][1].get<double>() >
                              decision["max_slowdown_pct"].get<double>());
  }
}

// The command's text, and its JSON from a second run (the simulation is deterministic).
void expect_command_agrees(const std::vector<std::string>& args) {
  test::Sandbox sb;
  const auto text = sb.regime(args);
  ASSERT_EQ(text.status, 0) << text.err;
  auto with_json = args;
  with_json.push_back("--json");
  const auto j = sb.regime(with_json);
  ASSERT_EQ(j.status, 0) << j.err;
  expect_text_views_agree(text.out, json::parse(j.out)["decision"]);
}

TEST(DecisionViewsCli, StudyOnL4ShowsOneSetOfFigures) {
  expect_command_agrees(
      {"study", "--device", "sim:l4", "--workload", "sim:resnet50", "--no-control"});
}

TEST(DecisionViewsCli, SweepOnL4ShowsOneSetOfFigures) {
  expect_command_agrees({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50"});
}

TEST(DecisionViewsCli, RecommendOfTheTableOutDecidesAsTheKeptSweep) {
  test::Sandbox sb;
  const std::string table = (sb.path() / "l4.csv").string();
  const auto s = sb.regime({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50",
                            "--table-out", table, "--json"});
  ASSERT_EQ(s.status, 0) << s.err;
  const json sweep = json::parse(s.out);
  const json& live = sweep["decision"];
  // The table carries what the decision used: the default's second window and exact intervals.
  const std::string csv = test::read_text(table);
  EXPECT_NE(csv.find(",again"), std::string::npos) << csv;
  EXPECT_NE(csv.find("energy_lo_J,energy_hi_J"), std::string::npos) << csv;

  const auto from_table = sb.regime({"recommend", "--sweep", table, "--json"});
  ASSERT_EQ(from_table.status, 0) << from_table.err;
  const auto from_run =
      sb.regime({"recommend", "--run", sweep["stored_as"].get<std::string>(), "--json"});
  ASSERT_EQ(from_run.status, 0) << from_run.err;
  for (const auto* r : {&from_table, &from_run}) {
    const json d = json::parse(r->out)["workloads"][0]["decision"];
    EXPECT_EQ(d["cap_W"], live["cap_W"]) << d["reason"];
    EXPECT_EQ(d["keep_default"], live["keep_default"]);
    EXPECT_EQ(pct1(d["energy_change_pct"]), pct1(live["energy_change_pct"]));
    EXPECT_EQ(pct1(d["time_change_pct"]), pct1(live["time_change_pct"]));
    EXPECT_EQ(d["energy_change_ci_pct"].dump(), live["energy_change_ci_pct"].dump());
  }
  // The text of `recommend` prints the same figures.
  const auto text = sb.regime({"recommend", "--sweep", table});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find(fmt::format("{:.1f} {:>+9.1f}", live["cap_W"].get<double>(),
                                      live["energy_change_pct"].get<double>())),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace regime
