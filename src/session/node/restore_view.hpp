#pragma once
// The presenters of `regime restore`'s report: its JSON and its text, both built from the same
// RestoreReport.
#include <nlohmann/json.hpp>
#include <string>

namespace regime::session {

struct RestoreReport;

// {"journal", "read_only", "failed", "outcomes", "jobs_of_earlier_boots"}.
nlohmann::json to_json(const RestoreReport& report);

// One line per journal entry (restored, would restore, or FAILED with the error), then one per
// job of an earlier boot.
std::string to_text(const RestoreReport& report);

}  // namespace regime::session
