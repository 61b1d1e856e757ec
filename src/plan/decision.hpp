#pragma once
// The decision: which cap to keep, under an objective, with the evidence rule of regime-first
// power management: keep the default limit unless a cap that can bind beats it by more than the
// measurement noise allows (docs/sweep.md, "Keep-default rule").
//
//  - Probes with confidence intervals (live and restart runs; tables with energy_ci_J): the best
//    cap is chosen only if its score interval lies wholly below the default's. A cap that the
//    default's power windows say would bind under kMinBindShare of the time is not credited.
//  - Single measurements (sweep tables): whether power follows the cap is tested on the rows
//    themselves (plan/evidence.hpp). Rows at caps that cannot bind repeat the default's
//    measurement: the default's level is their mean, and their scatter (with the roughness of the
//    binding rows' curve) is the noise. The best binding cap must beat that level by more than
//    the Student t quantile at 1 - kDecisionAlpha / (candidates) times the noise.
//  - Either way, a lower cap that runs faster than the default beyond the noise is noise, not a
//    saving (a cap cannot speed work up), unless heat limited the default's clocks (then a cooler
//    card may indeed run faster).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/binding.hpp"
#include "plan/evidence.hpp"
#include "plan/objective.hpp"
#include "plan/probe.hpp"

namespace regime::plan {

// The adaptive search's noise before any row says otherwise (the prior of plan/evidence.hpp).
inline constexpr double kNoiseFloorRel = kPriorNoiseRel;
// The search range: caps at or above the mean draw at the default x (1 + this) are not searched
// when some cap lies below the draw (peaks above the mean reach a cap the mean does not: Zeus V100
// shufflenetv2 bs64 draws 89 W and still saves 11% at 100 W).
inline constexpr double kNoBindMargin = 0.15;
// False-saving rate of the keep-default rule over the candidates (Bonferroni), and of the physics
// check per row: chosen on the V100 table's rows that cannot bind, checked on the RTX 6000's.
inline constexpr double kDecisionAlpha = 0.05;
inline constexpr double kPhysicsAlpha = 0.05;
// With intervals: a lower cap is faster beyond the noise only when its time interval lies this
// far under the default's. One window's bootstrap interval does not see how step time wanders
// from window to window (scheduling, other processes): 1% is well above that wander on the H200
// (probe intervals +-0.4%, docs/h200.md) and well under any slowdown a cap is chosen for.
inline constexpr double kPhysicsToleranceRel = 0.01;
// A live sweep measures the default twice, first and last. Past this relative change of energy
// per step between the two windows the card changed under the sweep (heat, other work) too much
// for any comparison to hold, and the default is kept.
inline constexpr double kMaxDriftRel = 0.10;

// The default measured again at the end of a live sweep, and what changed between the windows.
struct Drift {
  double energy_pct = 0;  // second window against the first
  double time_pct = 0;
  Measurement first, second;
};
nlohmann::json to_json(const Drift& d);

struct NotCredited {
  double cap_W = 0;
  std::string why;
};

// What another objective would choose: the unconstrained optimum beside a bounded slowdown.
struct Alternative {
  std::string objective;  // "energy"
  double cap_W = 0;
  bool keep_default = true;
  double energy_change_pct = 0;
  double time_change_pct = 0;
  std::string how;  // how to choose it: "--objective energy"
};

struct Decision {
  double cap_W = 0;
  bool keep_default = true;
  // Whether the chosen cap's saving lies beyond the measurement noise. Live probes choose a cap
  // only then; a table's best measured row is chosen either way and this says how sure it is.
  bool beyond_noise = false;
  double energy_change_pct = 0;  // chosen cap against the default limit's level
  double time_change_pct = 0;
  std::string reason;
  // The evidence behind it.
  std::string basis;  // "intervals", "single measurements" or "" (no comparison made)
  std::optional<TableBinding> binding;  // single measurements: does power follow the cap
  std::optional<NoiseEstimate> noise;   // single measurements: of the objective's score
  std::optional<NoiseEstimate> time_noise;
  std::optional<LiveBinding> live_binding;  // intervals: from the default's power windows
  std::vector<NotCredited> not_credited;
  std::optional<Alternative> unconstrained;  // for max-slowdown objectives
  std::optional<Drift> drift;                // a live sweep's two default windows
};

nlohmann::json to_json(const Decision& d);

// The second default window of a decision's JSON (evidence.drift.second), so that a kept sweep is
// decided again as it was decided live; nullopt when the decision has none.
std::optional<Measurement> default_again_from(const nlohmann::json& decision);

struct DecisionInputs {
  Objective objective;
  double default_limit_W = 0;
  double max_power_W = 0;                   // P_max for zeus: the highest limit of the device
  double noise_floor_rel = kNoiseFloorRel;  // the adaptive search's stop rule (search.hpp)
  // Noise known before one workload's rows are read (single measurements): the table's pooled
  // noise when the rows come from a table (table_noise_priors), else the fixed prior.
  NoisePriors priors;
  // False-saving rate of the keep-default rule and of the binding test (single measurements).
  double decision_alpha = kDecisionAlpha;
  double binding_alpha = kBindingAlpha;
  // The default measured again at the end of a live sweep: the default's estimate then spans both
  // windows and every other interval widens by half the drift between them (the caps were measured
  // somewhere in between); past kMaxDriftRel no comparison is made.
  std::optional<Measurement> default_again;
};

// Error InvalidArgument when no probe is at the default limit (nothing to compare against).
Decision decide(const std::vector<ProbeResult>& probes, const DecisionInputs& in);

// A decision that keeps the default for a stated reason, with no comparison made.
Decision keep_default_because(double default_limit_W, const std::string& reason);

// Index of the probe at `cap_W` (within 0.05 W), or -1.
int find_probe(const std::vector<ProbeResult>& probes, double cap_W);

// The objective's score of a probe; nullopt when it violates the objective's constraint.
std::optional<double> probe_score(const ProbeResult& p, const ProbeResult& at_default,
                                  const DecisionInputs& in);

}  // namespace regime::plan
