#pragma once
// How a sweep is shown, in one place: its table and decision as `regime sweep` and `regime study`
// print them, its JSON, and its sweep table.
#include <nlohmann/json.hpp>
#include <string>

#include "present/decision_view.hpp"
#include "session/sweep/sweep_types.hpp"

namespace regime::session {

// The sweep's decision as every view prints it (present/decision_view.hpp).
plan::DecisionView decision_view(const SweepReport& report);

// The sweep's table of measured caps and its decision, as `regime sweep` and `regime study` print
// them (present/render.hpp).
std::string results_text(const SweepReport& report);
std::string decision_text(const SweepReport& report);

// A job's per-GPU figures, one line per cap: "  250 W: nvml:0 50.1 J 243 W, ... spread 2.1%".
std::string per_gpu_text(const SweepReport& report);

// What `regime sweep` prints: the search, its table of measured caps, the decision, what was left
// set and where the sweep was kept.
std::string to_text(const SweepReport& report);

// The sweep's JSON (`regime sweep --json`, and what the run database keeps).
nlohmann::json to_json(const SweepReport& report);

// The measured caps as a sweep table (docs/contracts.md), highest cap first, with the intervals'
// exact ends and the default measured again at the end (window "again"): what the decision used,
// so that `regime recommend --sweep` decides it again the same way.
std::string sweep_table_csv(const SweepReport& report);

}  // namespace regime::session
