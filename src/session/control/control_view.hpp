#pragma once
// The presenters of `regime control`'s report: its JSON and its text, both built from the same
// ControlReport, so the two cannot tell different figures.
#include <nlohmann/json.hpp>
#include <string>

namespace regime::session {

struct ControlReport;

// Without --evaluate: the run, its actions and its measurement. With it: the evaluation contract
// (policy, engaged, reason, baseline, controlled, the changes with intervals, verdict, actions)
// and the same extensions.
nlohmann::json to_json(const ControlReport& report);

// What `regime control` prints on stdout. One GPU's warnings are not in it: the CLI writes them to
// stderr, where they do not mix with the run's lines.
std::string to_text(const ControlReport& report);

}  // namespace regime::session
