#pragma once
// Objectives (docs/contracts.md): what "best cap" means. Every objective is a score to minimise,
// computed from a Measurement (per step) and the Measurement at the default limit.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/measurement.hpp"

namespace regime::plan {

// One row each in the table of objective.cpp (objective_kinds()), which names and scores them.
enum class ObjectiveKind { Energy, Edp, Zeus, MaxSlowdown };

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

// A number an objective takes after its name and a colon (zeus:ETA, max-slowdown:PCT).
struct ObjectiveParam {
  std::string_view name;        // as the forms write it: "ETA"
  double Objective::*field;     // where parse_objective puts it and text() reads it
  double min, max;              // its range, both ends included; max infinite when unbounded
  std::string_view range_text;  // the range in the list of forms: "0 <= ETA <= 1"
  bool percent_sign = false;    // a trailing '%' is accepted ("max-slowdown:5%")
};

// An objective by name: what `--objective NAME[:NUMBER]` means. Adding one is a value of
// `ObjectiveKind` and one row of the table in objective.cpp; parse_objective, text(), the list
// of forms in its errors and score read the table.
struct ObjectiveEntry {
  ObjectiveKind kind;
  std::string_view name;
  std::optional<ObjectiveParam> param = std::nullopt;
  std::string_view summary;
  // The score to minimise, or nullopt when the measurement violates the objective's constraint.
  std::optional<double> (*score)(const Objective& o, double energy_per_step_J,
                                 double time_per_step_s, double default_time_per_step_s,
                                 double max_power_W);
  // Its parameter bounds the slowdown against the default (percent): what the search bisects
  // and the decision reports; the score without that bound is `unconstrained`'s.
  bool slowdown_bound = false;
  ObjectiveKind unconstrained = kind;
  bool score_is_energy = false;  // the score is energy per step alone (so is its noise)
  // The adaptive walk's curve stop rules a cap out when its predicted score lies above the best
  // by more than this share of the spread (one row's noise, the curve's interval, its misses so
  // far): 1 asks the whole interval to clear the best, 0 the point prediction alone. Chosen per
  // objective on the V100 table (the fewest probes with every binding workload within 1% of its
  // exhaustive cost), checked on the RTX 6000 and the corpus (docs/sweep.md, "How far the curve
  // is trusted"). The time-bound search of a slowdown-bound objective has no curve stop.
  double curve_stop_spread_share = 1;
};
const std::vector<ObjectiveEntry>& objective_kinds();
const ObjectiveEntry& objective_entry(ObjectiveKind kind);

// "energy", "edp", "zeus:ETA", "max-slowdown:PCT" (kDefaultObjective when empty); Error
// InvalidArgument naming the accepted forms
// and the valid range of the number.
Objective parse_objective(const std::string& text);

// Score to minimise, or nullopt when the measurement violates the objective's constraint
// (max-slowdown). `max_power_W` is P_max for zeus.
std::optional<double> score(const Objective& o, double energy_per_step_J, double time_per_step_s,
                            double default_time_per_step_s, double max_power_W);

// The objective without its constraint (max-slowdown:PCT -> energy); others unchanged.
Objective unconstrained(const Objective& o);

// The slowdown bound in percent, for an objective that has one (max-slowdown:PCT).
std::optional<double> slowdown_bound_pct(const Objective& o);

// Whether the score is energy per step alone (energy, max-slowdown).
bool scores_energy(const Objective& o);

// The score's interval from the measurement's intervals (all objectives grow with both energy
// and time, so the corners bound it). nullopt when the measurement has no intervals or violates.
std::optional<Interval> score_interval(const Objective& o, const Measurement& m,
                                       double default_time_per_step_s, double max_power_W);

bool has_intervals(const Measurement& m);

}  // namespace regime::plan
