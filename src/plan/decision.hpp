#pragma once
// The decision: which cap to keep, under an objective, with the evidence rule of regime-first
// power management: keep the default limit unless a cap beats it by more than the measurement
// uncertainty allows.
//
// The rule (docs/sweep.md, "Keep-default rule"):
//  - Both the best cap and the default have confidence intervals: the best cap is chosen only if
//    its score interval lies wholly below the default's (upper bound < lower bound).
//  - Otherwise (a sweep table measured once): the best cap must beat the default's score by more
//    than `noise_floor_rel` (2% by default, from the scatter of the Zeus tables), and a cap at or
//    above the draw at the default x (1 + kNoBindMargin) is not credited at all: the workload
//    cannot reach it, so its row repeats the default's measurement and any difference is noise.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/objective.hpp"
#include "plan/probe.hpp"

namespace regime::plan {

// Relative noise of a single measurement without intervals (docs/sweep.md derives it).
inline constexpr double kNoiseFloorRel = 0.02;
// A cap at or above the mean draw x (1 + this) cannot bind: peaks above the mean reach a cap the
// mean does not (Zeus V100 shufflenetv2 bs64 draws 89 W and still saves 11% at 100 W).
inline constexpr double kNoBindMargin = 0.15;

struct Decision {
  double cap_W = 0;
  bool keep_default = true;
  double energy_change_pct = 0;  // chosen cap against the default limit
  double time_change_pct = 0;
  std::string reason;
};

nlohmann::json to_json(const Decision& d);

struct DecisionInputs {
  Objective objective;
  double default_limit_W = 0;
  double max_power_W = 0;  // P_max for zeus: the highest limit of the device
  double noise_floor_rel = kNoiseFloorRel;
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
