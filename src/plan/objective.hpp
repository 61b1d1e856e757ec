#pragma once
// Objectives (docs/contracts.md): what "best cap" means. Every objective is a score to minimise,
// computed from a Measurement (per step) and the Measurement at the default limit.
#include <optional>
#include <string>

#include "analysis/measurement.hpp"

namespace regime::plan {

enum class ObjectiveKind {
  Energy,       // least J per step
  Edp,          // least energy x delay (J s per step^2)
  Zeus,         // least ETA*E + (1-ETA)*P_max*T (Zeus, NSDI 2023); P_max = the highest limit
  MaxSlowdown,  // least energy with time per step at most (1+PCT/100) x default
};

// The default objective: least energy per step with time per step at most 10% over the default
// limit's. Unbounded, "energy" accepted +58% time per step on sim:h200 without a word; the
// decision still shows the unconstrained optimum and how to choose it.
inline constexpr double kDefaultMaxSlowdownPct = 10;
inline constexpr const char* kDefaultObjective = "max-slowdown:10";

struct Objective {
  ObjectiveKind kind = ObjectiveKind::MaxSlowdown;
  double eta = 0.5;                                  // zeus:ETA, in [0, 1]
  double max_slowdown_pct = kDefaultMaxSlowdownPct;  // max-slowdown:PCT, >= 0
  std::string text() const;  // the canonical spelling: "energy", "zeus:0.5", ...
};

// "energy", "edp", "zeus:ETA", "max-slowdown:PCT" (kDefaultObjective when empty); Error
// InvalidArgument naming the accepted forms
// and the valid range of the number.
Objective parse_objective(const std::string& text);

// Score to minimise, or nullopt when the measurement violates the objective's constraint
// (max-slowdown). `max_power_W` is P_max for zeus.
std::optional<double> score(const Objective& o, double energy_per_step_J, double time_per_step_s,
                            double default_time_per_step_s, double max_power_W);

// The score's interval from the measurement's intervals (all objectives grow with both energy
// and time, so the corners bound it). nullopt when the measurement has no intervals or violates.
std::optional<Interval> score_interval(const Objective& o, const Measurement& m,
                                       double default_time_per_step_s, double max_power_W);

bool has_intervals(const Measurement& m);

}  // namespace regime::plan
