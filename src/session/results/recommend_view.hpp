#pragma once
// The presenters of `regime recommend`'s report: its JSON and its table, both built from the same
// RecommendReport.
#include <nlohmann/json.hpp>
#include <string>

namespace regime::session {

struct RecommendReport;

// {"workloads": [{"workload", "gpu", "decision"}, ...]}: each decision with its reason.
nlohmann::json to_json(const RecommendReport& report);

// One row per workload (its cap, the energy and time changes with their intervals, the decision),
// the time-bound notes, and a legend.
std::string to_text(const RecommendReport& report);

}  // namespace regime::session
