#pragma once
// Evidence from single measurements per cap (sweep tables, replayed rows): does power follow the
// cap, and how noisy is the table? docs/sweep.md, "Keep-default rule", derives every constant.
//
// Physics fixes the shape: a cap that binds at c binds at every lower cap, so mean power is flat
// (the workload never reaches the cap) from the default down to an onset, and falls below it.
// Rows at or above the onset are repeat measurements of the default; their scatter, pooled with
// the rest of the table's, is the table's noise. Binding rows lie on a curve that bends (time
// explodes towards the lowest caps), so their roughness would count curvature as noise: only
// mean power, flat and then about linear in the cap, is judged by its local roughness.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/probe.hpp"

namespace regime::plan {

// A relative noise of 2% worth 2 degrees of freedom steadies estimates from few rows (the
// roughness of the Zeus energy curves: 25th percentile 1.7%, median 2.5%, docs/sweep.md).
inline constexpr double kPriorNoiseRel = 0.02;
inline constexpr double kPriorNoiseDof = 2;
// Family-wise false-alarm rate of the binding test over the onset positions it tries: chosen on
// the V100 table (it finds every cap that binds there), checked on the RTX 6000 table.
inline constexpr double kBindingAlpha = 0.01;

// The least weight a prior pooled over a table's workloads carries (evidence.cpp, chosen by the
// decision benchmark's cross-check, docs/sweep.md): t quantiles at fewer dof made bars of 10-17%
// out of 1-3% noise.
inline constexpr double kMinPooledPriorDof = 10;

// What is known of a table's noise before one workload's rows are read: the fixed prior above,
// or the table's own, pooled over its workloads by empirical Bayes (table_noise_priors).
struct NoisePrior {
  double rel_sd = kPriorNoiseRel;
  double dof = kPriorNoiseDof;
  std::string source = "assumed";
};
struct NoisePriors {
  NoisePrior power, energy, time;
};

// A cap under the default's mean draw x (1 + this) binds for certain: a limiter holds short
// windows of power under its cap, and power swings above its mean by more than this (the real
// H200 resnet50: 0.5 s windows reach 6% above the mean at p99).
inline constexpr double kCertainBindMargin = 0.05;

// The relative standard deviation of one row's value, with its degrees of freedom.
struct NoiseEstimate {
  double rel_sd = kPriorNoiseRel;
  double dof = kPriorNoiseDof;
  int repeat_rows = 0;      // rows at caps that cannot bind (their scatter counted)
  int curve_residuals = 0;  // pseudo-residuals of binding rows counted
  NoisePrior prior;
  // "1.9% (6 row(s) at caps that cannot bind, prior 2.0% assumed: 7 dof)"
  std::string describe() const;
};

// Relative noise of `values` (one per cap, caps descending) from the scatter of the rows listed
// in `repeats` about their mean and from the pseudo-residuals of consecutive rows in `curve`
// (caps where the value follows a locally straight line; at least 3 residuals, or none are
// used), combined with the prior (log scale).
NoiseEstimate relative_noise(const std::vector<double>& caps_W, const std::vector<double>& values,
                             const std::vector<size_t>& repeats, const std::vector<size_t>& curve,
                             const NoisePrior& prior = {});

struct TableBinding {
  bool binds = false;                  // power follows the cap beyond the noise
  double onset_cap_W = 0;              // caps below it bind; rows at or above it repeat the default
  std::vector<double> repeat_caps_W;   // at or above the onset (all rows when nothing binds)
  std::vector<double> binding_caps_W;  // below the onset
  double t = 0;                        // the hinge fit's t statistic at the onset
  double critical_t = 0;               // what it had to exceed
  double power_drop_pct = 0;           // fitted power at the lowest cap against the flat level
  double certain_bind_W = 0;  // caps under it bind for certain (the default's draw x (1 + margin))
  bool cap_under_draw_measured = false;  // some measured cap lies under certain_bind_W
  double row_drop_crit_log = 0;  // a row's own log power drop that shows a cap binding there
  NoiseEstimate power_noise;
  std::string summary;  // one sentence with the numbers
};

// The rows are probes (any order) with mean power; the highest cap is the default. Caps under
// the default's draw x (1 + kCertainBindMargin) bind for certain. Above them, a hinge is fitted
// to log power at each candidate onset (flat above it, linear in the cap below it); the best one
// binds when its slope's t statistic exceeds the Student t quantile at 1 - kBindingAlpha /
// (positions tried), with the power noise from pseudo-residuals of all rows and the prior.
TableBinding table_binding(const std::vector<ProbeResult>& probes,
                           const NoisePrior& power_prior = {}, double alpha = kBindingAlpha);

// The noise of a whole table, pooled over its workloads (each a list of rows, one per cap) by the
// empirical Bayes of Smyth (2004): each workload's variance estimate is a scaled chi-square draw
// around the table's; the spread of their logs beyond what their degrees of freedom explain
// says how far one workload may differ (the prior's dof), their centre gives the prior's size.
// Fewer than 3 workloads with an estimate: the fixed prior. `source` names the table.
NoisePriors table_noise_priors(const std::vector<std::vector<ProbeResult>>& workloads,
                               const std::string& source);

nlohmann::json to_json(const NoiseEstimate& n);
nlohmann::json to_json(const NoisePrior& p);
nlohmann::json to_json(const TableBinding& b);

}  // namespace regime::plan
