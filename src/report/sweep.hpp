#pragma once
// What a sweep measured, for the report page: energy and time per unit of work at each cap with
// their intervals, sorted by cap, and the decision; and the page of a sweep the run store kept.
// Pure.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/decision.hpp"
#include "plan/probe.hpp"
#include "present/decision_view.hpp"
#include "report/page.hpp"
#include "store/run_store.hpp"

namespace regime::report {

// {"unit", "default_limit_W", "points": [{cap_W, energy_per_step_J, energy_per_step_ci_J,
// time_per_step_s, time_per_step_ci_s, steps, avg_power_W}] (ascending cap; a cap probed twice
// keeps its last probe), "decision": plan::decision_json}: the decision's figures and intervals
// as its view has them, the default limit and unit too.
nlohmann::json sweep_section(const std::vector<plan::ProbeResult>& probes,
                             const plan::Decision& decision, const plan::DecisionView& view);
// The same from a decision as it was kept (decision_json's object, as the run store holds it), in
// `unit` ("step" or "second") against the default limit: a kept sweep drawn again.
nlohmann::json sweep_section(const std::vector<plan::ProbeResult>& probes,
                             const nlohmann::json& decision, const std::string& unit,
                             double default_limit_W);

// sweep_section of a sweep the run store kept: its table's caps, its decision as kept, and its
// "objective", "strategy" and "of" ("sweep", or "study" for a study's sweep). Error Parse as
// sweep_page_data.
nlohmann::json kept_sweep_section(const SweepRecord& sweep);

// The page of a kept sweep (`regime report sweep:ID`): every cap of its sweep table against the
// cap with the decision as it was kept, its objective and strategy; `regime` where one is known
// (the sweep's own, or its study's); in the cards the default limit's figures; the newest runs of
// the store beside them. No timeline: a sweep keeps its table, not its traces. Error Parse when
// its table or decision does not read whole, or the table holds other than one workload.
nlohmann::json sweep_page_data(const SweepRecord& sweep, const std::optional<std::string>& regime,
                               const std::vector<RunRecord>& store_runs,
                               const PageOptions& options);

}  // namespace regime::report
