// The pure core of src/plan/: cap grids, objectives, the keep-default decision.
#include <gtest/gtest.h>

#include <limits>

#include "common/error.hpp"
#include "plan/cap_grid.hpp"
#include "plan/decision.hpp"
#include "plan/objective.hpp"
#include "plan/recommend.hpp"
#include "plan/search.hpp"
#include "present/render.hpp"
#include "support/error_of.hpp"
#include "support/gpu_info.hpp"

namespace regime::plan {
namespace {

using test::error_of;

TEST(PlanCapGrid, AutoGridStepsFivePercentDownToTheMinimum) {
  EXPECT_EQ(auto_cap_grid(70, 60), (std::vector<double>{70, 66.5, 63, 60}));
  auto h200 = auto_cap_grid(700, 200);
  EXPECT_EQ(h200.front(), 700);
  EXPECT_EQ(h200[1], 665);
  EXPECT_EQ(h200.back(), 200);
  EXPECT_EQ(h200.size(), 16u);  // 700..210 in 35 W steps, then 200
}

TEST(PlanCapGrid, UserListsAreCheckedAgainstTheRange) {
  const GpuInfo info = testing::gpu_with_limits("sim:t4", 60, 70);
  EXPECT_EQ(parse_caps("64,70,60", info), (std::vector<double>{70, 64, 60}));
  EXPECT_EQ(error_of([&] { parse_caps("70,50", info); }),
            "cap 50 W is outside the range of sim:t4 (60-70 W)");
  EXPECT_NE(error_of([&] { parse_caps("70,x", info); }).find("'x' is not a number"),
            std::string::npos);
  EXPECT_EQ(with_default({64, 60}, 70), (std::vector<double>{70, 64, 60}));
}

TEST(PlanObjective, ParsesTheFourFormsAndRefusesTheRest) {
  EXPECT_EQ(parse_objective("energy").kind, ObjectiveKind::Energy);
  EXPECT_EQ(parse_objective("edp").kind, ObjectiveKind::Edp);
  EXPECT_DOUBLE_EQ(parse_objective("zeus:0.3").eta, 0.3);
  EXPECT_DOUBLE_EQ(parse_objective("max-slowdown:10").max_slowdown_pct, 10);
  EXPECT_DOUBLE_EQ(parse_objective("max-slowdown:5%").max_slowdown_pct, 5);
  EXPECT_NE(error_of([] { parse_objective("zeus"); }).find("needs a number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_objective("zeus:2"); }).find("outside [0, 1]"), std::string::npos);
  EXPECT_NE(error_of([] { parse_objective("max-slowdown:-1"); }).find(">= 0"), std::string::npos);
  EXPECT_NE(error_of([] { parse_objective("power"); }).find("unknown objective 'power'"),
            std::string::npos);
}

TEST(PlanObjective, ScoresFollowTheirDefinitions) {
  Objective zeus = parse_objective("zeus:0.25");
  EXPECT_DOUBLE_EQ(*score(zeus, 100, 2, 2, 300), 0.25 * 100 + 0.75 * 300 * 2);
  EXPECT_DOUBLE_EQ(*score(parse_objective("edp"), 100, 2, 2, 300), 200);
  Objective slow = parse_objective("max-slowdown:10");
  EXPECT_TRUE(score(slow, 90, 1.1, 1.0, 300).has_value());
  EXPECT_FALSE(score(slow, 80, 1.11, 1.0, 300).has_value());
}

ProbeResult point(double cap, double time_s, double energy_J, double ci_J = 0) {
  ProbeResult p;
  p.cap_W = cap;
  p.measurement.time_per_step_s = time_s;
  p.measurement.energy_per_step_J = energy_J;
  p.measurement.energy_per_step_ci_J = {energy_J - ci_J, energy_J + ci_J};
  p.measurement.avg_power_W = energy_J / time_s;
  return p;
}

DecisionInputs inputs(const std::string& objective = "energy") {
  DecisionInputs in;
  in.objective = parse_objective(objective);
  in.default_limit_W = 70;
  in.max_power_W = 70;
  return in;
}

// Single measurements: six rows where power follows the cap (binding is certain below the draw)
// and energy scatters by about 1% around a smooth curve; the best cap's gain is `gain`.
std::vector<ProbeResult> single_rows(double gain) {
  const std::vector<double> caps{70, 68, 66, 64, 62, 60};
  const std::vector<double> jitter{0, 0.008, -0.006, 0.01, -0.009, 0.004};
  const std::vector<double> shape{0, 1.0 / 3, 2.0 / 3, 1, 0.85, 0.7};  // best at 64 W
  std::vector<ProbeResult> rows;
  for (size_t i = 0; i < caps.size(); ++i) {
    ProbeResult p;
    p.cap_W = caps[i];
    p.measurement.time_per_step_s = 1 + 0.01 * static_cast<double>(i);
    p.measurement.energy_per_step_J = 100 * (1 + jitter[i]) * (1 - gain * shape[i]);
    p.measurement.avg_power_W = caps[i] * 0.99;
    rows.push_back(p);
  }
  return rows;
}

TEST(PlanDecision, ATableTakesItsBestRowAndSaysWhetherItBeatsTheNoise) {
  // Every cap binds, so the default is the only row of its kind: the noise is the prior's.
  auto d = decide(single_rows(0.015), inputs("energy"));
  EXPECT_FALSE(d.keep_default) << d.reason;
  EXPECT_FALSE(d.beyond_noise) << d.reason;
  EXPECT_LT(d.cap_W, 70);
  EXPECT_NE(d.reason.find("within the"), std::string::npos) << d.reason;
  ASSERT_TRUE(d.noise.has_value());
  EXPECT_EQ(d.noise->prior.source, "assumed");
  // 2% worth 2 dof, best of 5 candidates: a saving must exceed about 18% to beat the noise.
  EXPECT_FALSE(decide(single_rows(0.12), inputs("energy")).beyond_noise);
  auto c = decide(single_rows(0.25), inputs("energy"));
  EXPECT_FALSE(c.keep_default) << c.reason;
  EXPECT_TRUE(c.beyond_noise) << c.reason;
  EXPECT_EQ(c.cap_W, 64);
  EXPECT_NEAR(c.energy_change_pct, (1.01 * 0.75 - 1) * 100, 1e-6);
  EXPECT_NEAR(c.time_change_pct, 3, 1e-9);
  // A table whose other workloads show 1% noise over many rows makes 12% convincing.
  DecisionInputs known = inputs("energy");
  known.priors.energy = {0.01, 50, "pooled"};
  known.priors.time = {0.01, 50, "pooled"};
  EXPECT_TRUE(decide(single_rows(0.12), known).beyond_noise);
  // No row under the default's own: the default is kept.
  auto k = decide(single_rows(-0.2), inputs("energy"));
  EXPECT_TRUE(k.keep_default) << k.reason;
  EXPECT_NE(k.reason.find("no cap measured beats the default's own row"), std::string::npos)
      << k.reason;
}

TEST(PlanDecision, UsesConfidenceIntervalsWhenTheProbesHaveThem) {
  // 5% less energy, but the intervals overlap: no evidence.
  auto d = decide({point(70, 1, 100, 3), point(64, 1.05, 95, 3)}, inputs());
  EXPECT_TRUE(d.keep_default) << d.reason;
  EXPECT_NE(d.reason.find("overlaps"), std::string::npos) << d.reason;
  // 1.5% less (under the 2% floor) but tight intervals that do not overlap: evidence.
  auto e = decide({point(70, 1, 100, 0.3), point(64, 1.01, 98.5, 0.3)}, inputs());
  EXPECT_FALSE(e.keep_default) << e.reason;
}

TEST(PlanDecision, MaxSlowdownRespectsItsBoundAndShowsTheUnconstrainedOptimum) {
  auto d = decide({point(70, 1, 100, 0.5), point(64, 1.08, 95, 0.5), point(60, 1.2, 80, 0.5)},
                  inputs("max-slowdown:10"));
  EXPECT_EQ(d.cap_W, 64);
  ASSERT_TRUE(d.unconstrained.has_value());
  EXPECT_EQ(d.unconstrained->cap_W, 60);
  EXPECT_NEAR(d.unconstrained->time_change_pct, 20, 1e-9);
  EXPECT_EQ(d.unconstrained->how, "--objective energy");
  const std::string text = decision_text(d);
  EXPECT_NE(text.find("unconstrained optimum: 60 W (energy per step -20.0%, time per step +20.0%); "
                      "choose it with --objective energy"),
            std::string::npos)
      << text;
  EXPECT_EQ(to_json(d)["unconstrained"]["cap_W"], 60);
  // An objective without a bound shows no alternative.
  EXPECT_FALSE(decide({point(70, 1, 100, 0.5), point(60, 1.2, 80, 0.5)}, inputs("energy"))
                   .unconstrained.has_value());
  EXPECT_NE(error_of([] {
              decide({point(64, 1, 100)}, inputs());
            }).find("no measurement at the default limit 70 W"),
            std::string::npos);
}

// Zero-length steps made the default's time per step 0, every slowdown a NaN that passed the
// bound, and a cap was kept. A figure that is 0 or not finite decides nothing.
TEST(PlanDecision, AMeasurementWithoutAFiniteFigureCannotDecide) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::vector<ProbeResult> probes;
    std::string says;
  };
  auto zero_time = single_rows(0.25);
  zero_time[0].measurement.time_per_step_s = 0;
  auto nan_energy = single_rows(0.25);
  nan_energy[3].measurement.energy_per_step_J = nan;
  auto nan_interval = std::vector<ProbeResult>{point(70, 1, 100, 0.3), point(64, 1.01, 90, 0.3)};
  nan_interval[1].measurement.time_per_step_ci_s.second = nan;
  const std::vector<Case> cases = {
      {zero_time, "cannot decide: at 70 W the time per step is 0 s, not above 0"},
      {nan_energy, "cannot decide: at 64 W the energy per step is not a finite number"},
      {nan_interval,
       "cannot decide: at 64 W the time per step's interval high end is not a "
       "finite number"},
  };
  for (const Case& c : cases) {
    for (const std::string objective : {"energy", "max-slowdown:10", "edp"}) {
      const Decision d = decide(c.probes, inputs(objective));
      EXPECT_TRUE(d.keep_default) << objective << ": " << d.reason;
      EXPECT_EQ(d.cap_W, 70) << objective;
      EXPECT_EQ(d.reason.rfind(c.says, 0), 0u) << objective << ": " << d.reason;
      const std::string text =
          results_table(c.probes,
                        decision_view(d, c.probes, parse_objective(objective), 70, "step"),
                        std::nullopt) +
          decision_text(d);
      EXPECT_EQ(text.find("nan"), std::string::npos) << text;
      EXPECT_EQ(to_json(d).dump().find("nan"), std::string::npos);
    }
  }
}

TEST(PlanObjective, TheDefaultIsLeastEnergyWithinATenPercentSlowdown) {
  EXPECT_EQ(Objective{}.text(), "max-slowdown:10");
  EXPECT_EQ(parse_objective("").text(), "max-slowdown:10");
  EXPECT_EQ(parse_objective(kDefaultObjective).kind, ObjectiveKind::MaxSlowdown);
  EXPECT_EQ(parse_objective("energy").kind, ObjectiveKind::Energy);
}

class VectorProber : public Prober {
 public:
  explicit VectorProber(std::vector<ProbeResult> rows) : rows_(std::move(rows)) {}
  ProbeResult probe(double cap_W) override {
    ++calls;
    return rows_.at(static_cast<size_t>(find_probe(rows_, cap_W)));
  }
  int calls = 0;

 private:
  std::vector<ProbeResult> rows_;
};

TEST(PlanSearch, AdaptiveStopsWhenTheDrawIsBelowEveryCap) {
  // The workload draws 40 W on a 250 W card: no cap from 100 W up can bind.
  std::vector<ProbeResult> rows;
  for (double cap : {250, 200, 150, 100}) rows.push_back(point(cap, 1, 40));
  VectorProber prober(rows);
  SearchOptions opt;
  opt.caps = {250, 200, 150, 100};
  opt.decision = inputs();
  opt.decision.default_limit_W = opt.decision.max_power_W = 250;
  auto out = search(prober, opt);
  // The default, then the lowest cap: its power does not fall, so no cap between binds either.
  EXPECT_EQ(prober.calls, 2);
  EXPECT_TRUE(out.decision.keep_default);
  EXPECT_TRUE(out.no_cap_binds);
  EXPECT_NE(out.stop_reason.find("no cap binds"), std::string::npos) << out.stop_reason;
}

TEST(PlanSearch, AdaptiveStopsOnUnderutilizedUnlessForced) {
  std::vector<ProbeResult> rows;
  for (double cap : {250, 200, 150, 100}) rows.push_back(point(cap, 250.0 / cap, 240));
  SearchOptions opt;
  opt.caps = {250, 200, 150, 100};
  opt.decision = inputs();
  opt.decision.default_limit_W = opt.decision.max_power_W = 250;
  opt.classify = [](const Measurement&) { return Regime::Underutilized; };
  VectorProber p1(rows);
  auto out = search(p1, opt);
  EXPECT_EQ(p1.calls, 1);
  EXPECT_NE(out.decision.reason.find("capping is pointless"), std::string::npos);
  opt.force = true;
  VectorProber p2(rows);
  search(p2, opt);
  EXPECT_GT(p2.calls, 1);
}

TEST(PlanSearch, APredictedDrawPlacesTheSecondProbe) {
  // Power falls with every cap (all bind); without a prior the second probe is a third of the
  // way up the candidates, with one it is the candidate nearest the predicted draw.
  std::vector<ProbeResult> rows;
  const std::vector<double> caps = {300, 275, 250, 225, 200, 175, 150, 125, 100};
  for (double cap : caps) rows.push_back(point(cap, 300.0 / cap, cap - 5));
  SearchOptions opt;
  opt.caps = caps;
  opt.decision = inputs();
  opt.decision.default_limit_W = opt.decision.max_power_W = 300;
  VectorProber plain(rows);
  auto a = search(plain, opt);
  ASSERT_GE(a.probes.size(), 2u);
  EXPECT_DOUBLE_EQ(a.probes[1].cap_W, 150);  // round(0.34 x 7) = 2 of 100..275
  opt.start_cap_W = 262;
  VectorProber prior(rows);
  auto b = search(prior, opt);
  ASSERT_GE(b.probes.size(), 2u);
  EXPECT_DOUBLE_EQ(b.probes[1].cap_W, 250);
  opt.start_cap_W = 20;  // below every cap: the lowest
  VectorProber low(rows);
  EXPECT_DOUBLE_EQ(search(low, opt).probes[1].cap_W, 100);
}

}  // namespace
}  // namespace regime::plan
