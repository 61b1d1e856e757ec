#pragma once
// What a sweep measured, for the report page: energy and time per unit of work at each cap with
// their intervals, sorted by cap, and the decision. Pure.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/decision.hpp"
#include "plan/probe.hpp"
#include "present/decision_view.hpp"

namespace regime::report {

// {"unit", "default_limit_W", "points": [{cap_W, energy_per_step_J, energy_per_step_ci_J,
// time_per_step_s, time_per_step_ci_s, steps, avg_power_W}] (ascending cap; a cap probed twice
// keeps its last probe), "decision": plan::decision_json}: the decision's figures and intervals
// as its view has them, the default limit and unit too.
nlohmann::json sweep_section(const std::vector<plan::ProbeResult>& probes,
                             const plan::Decision& decision, const plan::DecisionView& view);

}  // namespace regime::report
