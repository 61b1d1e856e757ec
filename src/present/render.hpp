#pragma once
// Text and JSON forms of sweep results and decisions (pure: strings and JSON, no printing).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/decision.hpp"
#include "plan/probe.hpp"
#include "present/decision_view.hpp"

namespace regime::plan {

// {"cap_W","time_per_step_s","energy_per_step_J","avg_power_W","steps"} plus the 95% intervals
// ("time_per_step_ci_s", "energy_per_step_ci_J": [lo, hi]) when the measurement has them.
nlohmann::json result_json(const ProbeResult& p);

// The terminal table: cap, time per step, energy per step (with intervals), power, change against
// the decision's default level (change_vs_default: the decided cap's row shows the headline's
// figures). `default_again`: the default measured again at the end of a live sweep, a row of its
// own.
std::string results_table(const std::vector<ProbeResult>& probes, const DecisionView& view,
                          const std::optional<ProbeResult>& default_again = std::nullopt);

// "decision: 150 W (energy -23.0%, time +12.1%)\n  reason: ...", the change with its intervals
// and the time bound when only the point estimate meets it (DecisionView), then the noise of
// single measurements and, for a bounded slowdown, the unconstrained optimum and how to choose it.
std::string decision_text(const Decision& d, const DecisionView& view);
// The same without the probes: the decision's own figures, no intervals. `unit` names the unit of
// work ("step", or "second" when no step markers arrived).
std::string decision_text(const Decision& d, const std::string& unit = "step");

}  // namespace regime::plan
