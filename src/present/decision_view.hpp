#pragma once
// One decision as every view shows it (docs/sweep.md, "One decision, every view"): the cap, the
// energy and time change against the default with their 95% intervals, and whether only the
// point estimate meets a time bound. Computed once from the Decision and the probes it was made
// from; the text headline, the table, the interval line, the JSON, the report page and
// `regime recommend` all print from it, so they cannot disagree.
//
// Every change is against the default's level the decision used: with intervals, the default's
// window (both windows, first and last, when the sweep measured it again; the other caps'
// intervals then widen by half the drift, as the decision widened them); with single
// measurements, the level of the rows that repeat the default, whose changes the decision gives.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/decision.hpp"
#include "plan/objective.hpp"
#include "plan/probe.hpp"

namespace regime::plan {

struct DecisionView {
  double cap_W = 0;
  bool keep_default = true;
  double default_limit_W = 0;
  std::string unit = "step";  // the unit of work the changes are per
  double energy_change_pct = 0;
  double time_change_pct = 0;
  // 95% intervals of the changes; nullopt when the probes carry none (or nothing was chosen).
  std::optional<Interval> energy_change_ci_pct;
  std::optional<Interval> time_change_ci_pct;
  std::string interval_source;  // where the intervals come from, in words
  // The default's level every change is against; nullopt when no probe is at the default.
  std::optional<double> reference_energy_per_step_J;
  std::optional<double> reference_time_per_step_s;
  std::string reference_text;  // "72 W, the default limit measured first and last"
  // A bounded slowdown: the bound, and whether the time change's interval reaches past it while
  // its point estimate does not, said in words.
  std::optional<double> max_slowdown_pct;
  bool only_point_meets_time_bound = false;
  std::string time_bound_text;
  // Whether the chosen cap's saving lies beyond the measurement noise; when it does not, why the
  // cap is still taken, in words (a table's best row within the noise).
  bool saving_beyond_noise = false;
  std::string certainty_text;
};

// `probes` are those the decision was made from (any order); the default's second window, if the
// sweep measured one, is the decision's drift. Pure.
DecisionView decision_view(const Decision& d, const std::vector<ProbeResult>& probes,
                           const Objective& objective, double default_limit_W,
                           const std::string& unit = "step");

// A probe's change against the view's reference, percent (energy, time); the decided cap's is the
// view's own, so a table row and the headline print the same number. nullopt without a reference.
struct RowChange {
  double energy_pct = 0;
  double time_pct = 0;
};
std::optional<RowChange> change_vs_default(const DecisionView& v, const ProbeResult& p);

// {"cap_W", "keep_default", "energy_change_pct", "energy_change_ci_pct", "time_change_pct",
// "time_change_ci_pct", "interval_source", "reference", "max_slowdown_pct",
// "only_point_estimate_meets_time_bound", "time_bound", "saving_beyond_noise", "certainty"}.
nlohmann::json to_json(const DecisionView& v);

// The decision's JSON (plan::to_json) with the view's intervals and time bound beside its figures,
// and the view itself under "view".
nlohmann::json decision_json(const Decision& d, const DecisionView& v);

// "energy per step -7.6% [-8.4, -6.7], time per step +8.6% [+7.2, +10.8] (95% CI) against 72 W,
// the default limit measured first and last"; empty when the default is kept.
std::string interval_line(const DecisionView& v);

// "-7.6% [-8.4, -6.7]" or "-7.6%".
std::string pct_with_ci(double pct, const std::optional<Interval>& ci);

}  // namespace regime::plan
