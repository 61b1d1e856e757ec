// The adaptive search's curve: the twin (fitted to the probes) against the quadratic, with the
// search settings chosen on the seen half of the Zeus sweeps and scored on the held-out half
// (docs/twin.md, "Validation"; the split is twin/holdout.hpp's).
#include "plan/twin_curve.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "plan/evaluate.hpp"
#include "plan/sim_corpus.hpp"
#include "twin/fit.hpp"
#include "twin/holdout.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"
#include "twin/sweep.hpp"

namespace regime::plan {
namespace {

ProbeResult probe_at(const twin::GpuSpec& gpu, const twin::WorkloadParams& w, double cap_W) {
  twin::SteadyState s = twin::steady_state(gpu, w, cap_W);
  ProbeResult p;
  p.cap_W = cap_W;
  p.measurement.time_per_step_s = s.time_s;
  p.measurement.avg_power_W = s.avg_power_W;
  p.measurement.energy_per_step_J = s.energy_J;
  return p;
}

// The search says which curve it trusts and how far: a calibrated spec's twin as it is, an
// estimated spec's twin with its wider intervals named, the quadratic where no spec exists.
TEST(PlanTwinCurve, TheNoteSaysWhereTheTwinIsReliedOnLess) {
  const CurveNote v100 = curve_note(twin::find_gpu_spec("v100"));
  EXPECT_EQ(v100.model, "twin");
  EXPECT_EQ(v100.gpu_spec, "v100");
  EXPECT_TRUE(v100.spec_calibrated);
  EXPECT_EQ(v100.interval_extra_pct, 0.0);
  EXPECT_EQ(to_text(v100).find("relied on less"), std::string::npos) << to_text(v100);

  const CurveNote a100 = curve_note(twin::find_gpu_spec("a100"));
  EXPECT_EQ(a100.model, "twin");
  EXPECT_FALSE(a100.spec_calibrated);
  EXPECT_DOUBLE_EQ(a100.interval_extra_pct, 100 * twin::kUncalibratedFitExtraRel);
  EXPECT_NE(to_text(a100).find("relied on less"), std::string::npos) << to_text(a100);
  EXPECT_NE(to_text(a100).find(fmt::format("{:.1f} points wider", a100.interval_extra_pct)),
            std::string::npos)
      << to_text(a100);

  const CurveNote none = curve_note(std::nullopt);
  EXPECT_EQ(none.model, "quadratic");
  EXPECT_TRUE(none.gpu_spec.empty());
  EXPECT_NE(to_text(none).find("quadratic"), std::string::npos);
}

// Fitted at 700 and 650 W only, the twin's figure at 245 W carries a wide interval and is marked
// extrapolated; near the fitted caps the interval is narrow.
TEST(PlanTwinCurve, PredictionsFarFromTheProbesCarryAWideInterval) {
  const twin::GpuSpec h200 = twin::load_gpu_spec("h200");
  const auto w = twin::workload_on(twin::sim_workload_profile("gemm"), h200);
  auto model = twin_curve_fitter(h200)({probe_at(h200, w, 700), probe_at(h200, w, 650)});
  ASSERT_TRUE(model);
  auto near = model->predict(680), far = model->predict(245);
  ASSERT_TRUE(near && far);
  EXPECT_FALSE(near->extrapolated);
  EXPECT_TRUE(far->extrapolated);
  EXPECT_LT(near->half_width_rel, 0.05);
  EXPECT_GT(far->half_width_rel, 0.2);
  std::cout << fmt::format("h200 gemm fitted at 650/700 W: 680 W +-{:.1f} %, 245 W +-{:.1f} %\n",
                           100 * near->half_width_rel, 100 * far->half_width_rel);
}

// The simulated corpus (plan/sim_corpus.hpp: two-phase workloads, thermal cliffs, knees, 0.5-4 %
// noise) is unlike both Zeus tables and has no twin spec: each GPU is fitted with four other cards'
// specs carried to its limits, from 3 caps (twin::choose_fit_caps), the energy error at the other
// caps scored against the truth behind the noisy rows. The twin is worse here than on the Zeus
// tables; the widening for a spec not calibrated across its range (kUncalibratedFitExtraRel,
// chosen on the Zeus seen half) must make its interval hold the truth more often.
TEST(PlanTwinCurve, SimulatedCorpusWithSpecsOfOtherCards) {
  const auto corpus = sim_corpus();
  const auto gpus = sim_corpus_gpus();
  for (size_t g = 0; g < gpus.size(); ++g) {
    std::map<std::string, std::map<double, twin::CapPoint>> rows, truth;
    for (const auto& r : corpus[g].measured.rows)
      rows[r.workload][r.cap_W] = {r.cap_W, r.time_s, r.avg_power_W};
    for (const auto& r : corpus[g].truth.rows)
      truth[r.workload][r.cap_W] = {r.cap_W, r.time_s, r.avg_power_W};
    std::vector<double> errors;
    double inside = 0, inside_unwidened = 0, points = 0;
    for (const char* other : {"p100", "a40", "a100", "h100"}) {
      const twin::GpuSpec spec =
          twin::spec_scaled_to(twin::load_gpu_spec(other), gpus[g].min_W, gpus[g].default_W);
      for (const auto& [name, caps] : rows) {
        std::vector<double> sorted;
        for (const auto& [cap, p] : caps) sorted.push_back(cap);
        const std::vector<double> fit_caps = twin::choose_fit_caps(sorted, 3);
        std::vector<twin::CapPoint> points_fitted;
        for (double c : fit_caps) points_fitted.push_back(caps.at(c));
        const twin::CurveFit fit = twin::fit_curve(spec, points_fitted);
        ASSERT_GT(fit.interval_extra_rel, 0);
        double sum = 0;
        int n = 0;
        for (const auto& [cap, m] : truth.at(name)) {
          if (std::find(fit_caps.begin(), fit_caps.end(), cap) != fit_caps.end()) continue;
          const twin::CapPoint p = fit.predict(cap);
          const double error = std::abs(p.time_s * p.avg_power_W / (m.time_s * m.avg_power_W) - 1);
          const double half_width = fit.uncertainty(cap).half_width_rel;
          inside += error <= half_width;
          inside_unwidened += error <= half_width - fit.interval_extra_rel;
          sum += error;
          ++n;
          ++points;
        }
        errors.push_back(100 * sum / n);
      }
    }
    std::cout << fmt::format(
        "{}: median energy error against the truth {:.2f} % ({} fits); interval holds the truth "
        "at {:.1f} % of {} points ({:.1f} % without the widening)\n",
        gpus[g].name, twin::median(errors), errors.size(), 100 * inside / points, points,
        100 * inside_unwidened / points);
    EXPECT_GT(inside, inside_unwidened) << gpus[g].name;
    EXPECT_LT(twin::median(errors), 8.0) << gpus[g].name;
  }
}

SweepTable zeus_part(bool held_out) {
  SweepTable out;
  for (const char* name : {"V100.sweep.csv", "RTX6000.sweep.csv"}) {
    auto t = read_sweep_table(std::filesystem::path(REGIME_TEST_DATA_DIR) / "zeus" / name);
    for (const auto& r : t.rows)
      if (twin::is_held_out(r.gpu, r.workload) == held_out) out.rows.push_back(r);
  }
  return out;
}

struct SearchScore {
  int workloads = 0, probes = 0, same_as_exhaustive = 0;
  double regret_p90_pct = 0, regret_max_pct = 0;  // where a cap can bind
};

SearchScore score_search(const SweepTable& table,
                         const std::function<CurveFitter(const std::string&)>& fitter_for,
                         const SearchOptions& settings) {
  const auto exhaustive = evaluate_strategy(table, Strategy::Exhaustive);
  const auto adaptive =
      evaluate_strategy(table, Strategy::Adaptive, kNoiseFloorRel, fitter_for, settings);
  SearchScore s;
  std::vector<WorkloadEvaluation> bindable;
  for (size_t i = 0; i < adaptive.size(); ++i) {
    ++s.workloads;
    s.probes += adaptive[i].probes;
    // The same cap, or, where exhaustive's saving is within the noise (rows that repeat the
    // default), any cap not called a saving beyond it either.
    if (adaptive[i].chosen_cap_W == exhaustive[i].chosen_cap_W ||
        (!exhaustive[i].beyond_noise && !adaptive[i].beyond_noise))
      ++s.same_as_exhaustive;
    if (!adaptive[i].gated) bindable.push_back(adaptive[i]);
  }
  const auto sum = summarize(bindable);
  s.regret_p90_pct = sum.regret_p90_pct;
  s.regret_max_pct = sum.regret_max_pct;
  return s;
}

TEST(PlanTwinCurve, SearchSettingsChosenOnTheSeenHalfTwinAgainstQuadratic) {
  const SweepTable seen = zeus_part(false), held = zeus_part(true);
  const std::function<CurveFitter(const std::string&)> twin = curve_fitter_for;
  const std::function<CurveFitter(const std::string&)> quadratic = [](const std::string&) {
    return CurveFitter{};
  };
  std::cout << fmt::format("{:<10} {:<9} {:>8} {:>6} {:>9} {:>8} {:>18} {:>10} {:>9}\n", "curve",
                           "part", "2nd at", "min n", "workloads", "probes", "same as exhaustive",
                           "regret p90", "max");
  for (const auto& [label, fitter] : {std::pair{"twin", twin}, {"quadratic", quadratic}}) {
    // Settings: the fewest probes on the seen half among those that decide as exhaustive does on
    // every seen workload (the defaults win ties).
    SearchOptions best;
    SearchScore best_score = score_search(seen, fitter, best);
    for (double fraction : {0.25, 0.34, 0.5})
      for (size_t min_n : {3u, 4u, 5u}) {
        SearchOptions o;
        o.second_probe_fraction = fraction;
        o.min_probes_before_model_stop = min_n;
        SearchScore sc = score_search(seen, fitter, o);
        if (sc.same_as_exhaustive == sc.workloads &&
            (best_score.same_as_exhaustive < best_score.workloads ||
             sc.probes < best_score.probes)) {
          best = o;
          best_score = sc;
        }
      }
    const SearchScore held_score = score_search(held, fitter, best);
    for (const auto& [part, sc] : {std::pair{"seen", best_score}, {"held-out", held_score}})
      std::cout << fmt::format(
          "{:<10} {:<9} {:>8.2f} {:>6} {:>9} {:>8} {:>18} {:>9.2f}% {:>8.2f}%\n", label, part,
          best.second_probe_fraction, best.min_probes_before_model_stop, sc.workloads, sc.probes,
          sc.same_as_exhaustive, sc.regret_p90_pct, sc.regret_max_pct);
    EXPECT_EQ(best_score.same_as_exhaustive, best_score.workloads) << label;
    // configure_curve carries what this search chose.
    SearchOptions configured;
    configure_curve(configured, std::string(label) == "twin" ? "V100" : "no such GPU");
    EXPECT_DOUBLE_EQ(configured.second_probe_fraction, best.second_probe_fraction) << label;
    EXPECT_EQ(configured.min_probes_before_model_stop, best.min_probes_before_model_stop) << label;
    // Held out: the decision of exhaustive on at least 95 % of workloads, with far fewer probes.
    EXPECT_GE(held_score.same_as_exhaustive, 0.95 * held_score.workloads) << label;
    EXPECT_LE(held_score.regret_p90_pct, 1.0) << label;
  }
}

}  // namespace
}  // namespace regime::plan
