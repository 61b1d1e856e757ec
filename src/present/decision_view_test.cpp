// One decision, every view: the headline, the table, the interval line and the JSON print the
// same cap and the same changes, against the default's level the decision used.
#include "present/decision_view.hpp"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/decision.hpp"
#include "plan/recommend.hpp"
#include "present/render.hpp"
#include "support/text_table.hpp"

namespace regime::plan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ProbeResult probe(double cap_W, double energy_J, double time_s, double rel_ci = 0.01) {
  ProbeResult p;
  p.cap_W = cap_W;
  Measurement& m = p.measurement;
  m.energy_per_step_J = energy_J;
  m.time_per_step_s = time_s;
  m.avg_power_W = energy_J / time_s;
  m.steps = 200;
  if (rel_ci > 0) {
    m.energy_per_step_ci_J = {energy_J * (1 - rel_ci), energy_J * (1 + rel_ci)};
    m.time_per_step_ci_s = {time_s * (1 - rel_ci), time_s * (1 + rel_ci)};
  }
  return p;
}

// A live sweep measured its default first and last: the decision's changes are against the mean
// of both windows, and so are the table's, the interval line's and the JSON's.
TEST(PlanDecisionView, EveryViewIsAgainstBothDefaultWindows) {
  const std::vector<ProbeResult> probes = {probe(72, 10.0, 0.100, 0.004),
                                           probe(60, 9.25, 0.1085, 0.01)};
  DecisionInputs in;
  in.objective = parse_objective("max-slowdown:10");
  in.default_limit_W = in.max_power_W = 72;
  in.default_again = probe(72, 10.05, 0.1005, 0.004).measurement;
  const Decision d = decide(probes, in);
  ASSERT_FALSE(d.keep_default) << d.reason;
  ASSERT_TRUE(d.drift.has_value());
  const DecisionView v = decision_view(d, probes, in.objective, 72);
  // The decision's own figures, the reference the mean of both windows.
  EXPECT_DOUBLE_EQ(v.energy_change_pct, d.energy_change_pct);
  EXPECT_NEAR(v.energy_change_pct, 100 * (9.25 / 10.025 - 1), 1e-9);
  ASSERT_TRUE(v.reference_energy_per_step_J.has_value());
  EXPECT_NEAR(*v.reference_energy_per_step_J, 10.025, 1e-12);
  EXPECT_THAT(v.reference_text, HasSubstr("measured first and last"));
  // The interval contains the point and spans the second window and the widened cap.
  ASSERT_TRUE(v.energy_change_ci_pct && v.time_change_ci_pct);
  EXPECT_LT(v.energy_change_ci_pct->first, v.energy_change_pct);
  EXPECT_GT(v.energy_change_ci_pct->second, v.energy_change_pct);
  // +8.2% in time, the interval reaches past +10%: said in words.
  EXPECT_LT(v.time_change_pct, 10);
  EXPECT_GT(v.time_change_ci_pct->second, 10);
  EXPECT_TRUE(v.only_point_meets_time_bound);
  EXPECT_THAT(v.time_bound_text, HasSubstr("only the point estimate meets the 10% slowdown bound"));

  const std::string headline = decision_text(d, v);
  const std::string e = fmt::format("{:+.1f}%", v.energy_change_pct);
  const std::string t = fmt::format("{:+.1f}%", v.time_change_pct);
  EXPECT_THAT(headline, HasSubstr("decision: 60 W (energy per step " + e + ", time per step " + t));
  EXPECT_THAT(headline, HasSubstr("change: " + interval_line(v)));
  EXPECT_THAT(headline, HasSubstr("time bound: only the point estimate"));
  EXPECT_THAT(interval_line(v),
              HasSubstr(pct_with_ci(v.energy_change_pct, v.energy_change_ci_pct)));

  ProbeResult again = probes.front();
  again.measurement = *in.default_again;
  const std::string table = results_table(probes, v, again);
  const auto row = test::row_cells(table, "60.0");
  ASSERT_GE(row.size(), 10u) << table;
  EXPECT_EQ(row[row.size() - 3] + "%", e) << table;
  EXPECT_EQ(row[row.size() - 2] + "%", t) << table;
  // Both default windows are rows, each against their mean.
  EXPECT_FALSE(test::row_cells(table, "72.0*").empty()) << table;
  EXPECT_THAT(table, HasSubstr("against 72 W, the default limit measured first and last"));

  const nlohmann::json j = decision_json(d, v);
  EXPECT_EQ(j["cap_W"], 60.0);
  EXPECT_EQ(j["energy_change_pct"], v.energy_change_pct);
  EXPECT_EQ(j["time_change_ci_pct"][1], v.time_change_ci_pct->second);
  EXPECT_TRUE(j["only_point_estimate_meets_time_bound"].get<bool>());
  EXPECT_TRUE(j["evidence"].contains("drift"));  // what deciding again needs
}

// Single measurements: the changes are against the level of the rows that repeat the default,
// which is not the default's own row; the table must show the decision's numbers, not the row's.
TEST(PlanDecisionView, SingleMeasurementsAreAgainstTheDefaultsLevel) {
  const SweepTable t = parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit\n"
      "w,G,300,1.000,250,step\nw,G,290,0.975,252.5,step\nw,G,280,0.980,249,step\n"
      "w,G,250,1.010,236,step\nw,G,225,1.050,214,step\nw,G,200,1.098,190,step\n"
      "w,G,175,1.200,168,step\nw,G,150,1.390,145,step\n",
      "t.csv");
  const std::vector<Recommendation> recs = recommend(t, parse_objective("max-slowdown:10"));
  ASSERT_EQ(recs.size(), 1u);
  const Decision& d = recs.front().decision;
  const auto probes = probes_from_rows(t.rows);
  const DecisionView v = decision_view(d, probes, parse_objective("max-slowdown:10"), 300);
  EXPECT_EQ(v.cap_W, d.cap_W);
  ASSERT_FALSE(d.keep_default) << d.reason;
  // The table's row and the headline print the decision's figures, against what it compared.
  EXPECT_DOUBLE_EQ(v.energy_change_pct, d.energy_change_pct);
  EXPECT_DOUBLE_EQ(v.time_change_pct, d.time_change_pct);
  ASSERT_TRUE(v.reference_time_per_step_s.has_value());
  const auto at = static_cast<size_t>(find_probe(probes, d.cap_W));
  EXPECT_NEAR(100 * (probes[at].measurement.time_per_step_s / *v.reference_time_per_step_s - 1),
              d.time_change_pct, 1e-9);
  EXPECT_FALSE(v.reference_text.empty());
  const auto row = test::row_cells(results_table(probes, v), fmt::format("{:.1f}", d.cap_W));
  ASSERT_GE(row.size(), 7u);
  EXPECT_EQ(row[row.size() - 2], fmt::format("{:+.1f}", v.time_change_pct));
  EXPECT_EQ(row[row.size() - 3], fmt::format("{:+.1f}", v.energy_change_pct));
  // Intervals from the rows' noise, around the point.
  ASSERT_TRUE(v.time_change_ci_pct.has_value());
  EXPECT_LT(v.time_change_ci_pct->first, v.time_change_pct);
  EXPECT_GT(v.time_change_ci_pct->second, v.time_change_pct);
  EXPECT_THAT(v.interval_source, HasSubstr("noise"));
}

TEST(PlanDecisionView, AKeptDefaultShowsNoChangeAndNoInterval) {
  const std::vector<ProbeResult> probes = {probe(72, 10.0, 0.1), probe(60, 9.95, 0.11)};
  const Decision d = keep_default_because(72, "nothing beats it");
  const DecisionView v = decision_view(d, probes, parse_objective("energy"), 72);
  EXPECT_TRUE(v.keep_default);
  EXPECT_EQ(v.energy_change_pct, 0);
  EXPECT_FALSE(v.energy_change_ci_pct.has_value());
  EXPECT_EQ(interval_line(v), "");
  EXPECT_THAT(decision_text(d, v), Not(HasSubstr("change:")));
  // The table still compares every row with the default.
  const auto row = test::row_cells(results_table(probes, v), "60.0");
  ASSERT_GE(row.size(), 7u);
  EXPECT_EQ(row[row.size() - 3], "-0.5");
}

// A table whose rows barely differ in energy while power follows the cap: its best row is taken,
// and every view says the saving is within the noise; a clear saving says nothing of the kind.
TEST(PlanDecisionView, ATableRowWithinTheNoiseIsSaidToBe) {
  std::vector<ProbeResult> rows;
  const double energy[] = {100, 99, 101, 97.5, 100.5, 99.5};
  for (int i = 0; i < 6; ++i) {
    ProbeResult p = probe(300 - 20 * i, energy[i], 1.0, 0);
    p.measurement.avg_power_W = 150 * (1 - 0.08 * i);  // follows the cap
    rows.push_back(p);
  }
  DecisionInputs in;
  in.objective = parse_objective("max-slowdown:10");
  in.default_limit_W = in.max_power_W = 300;
  const Decision d = decide(rows, in);
  ASSERT_FALSE(d.keep_default) << d.reason;
  EXPECT_EQ(d.cap_W, 240) << d.reason;
  EXPECT_FALSE(d.beyond_noise) << d.reason;
  const DecisionView v = decision_view(d, rows, in.objective, 300);
  EXPECT_FALSE(v.saving_beyond_noise);
  EXPECT_THAT(v.certainty_text, HasSubstr("within the noise"));
  EXPECT_THAT(decision_text(d, v), HasSubstr("certainty: within the noise"));
  const nlohmann::json j = decision_json(d, v);
  EXPECT_FALSE(j["saving_beyond_noise"].get<bool>());
  EXPECT_THAT(j["certainty"].get<std::string>(), HasSubstr("within the noise"));

  // Power follows the cap and energy falls 20%: beyond the noise, no certainty line.
  for (size_t i = 1; i < rows.size(); ++i) {
    rows[i].measurement.avg_power_W = 150 * (1 - 0.08 * static_cast<double>(i));
    rows[i].measurement.energy_per_step_J = 100 * (1 - 0.04 * static_cast<double>(i));
  }
  const Decision c = decide(rows, in);
  ASSERT_FALSE(c.keep_default) << c.reason;
  EXPECT_TRUE(c.beyond_noise) << c.reason;
  const DecisionView cv = decision_view(c, rows, in.objective, 300);
  EXPECT_TRUE(cv.saving_beyond_noise);
  EXPECT_TRUE(cv.certainty_text.empty());
  EXPECT_THAT(decision_text(c, cv), Not(HasSubstr("certainty:")));
}

}  // namespace
}  // namespace regime::plan
