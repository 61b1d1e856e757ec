#pragma once
// A device sweep in the run database: its sweep table and report, and its decision beside it.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "session/sweep/sweep_types.hpp"

namespace regime {
class DatabaseLocation;
class RunStore;
}  // namespace regime

namespace regime::session {

// Keeps a device sweep in the run database as a sweep table, so that it can be decided again
// (`regime recommend --run sweep:ID`). `kind` is "sweep" or "study"; returns the id. `json` is
// the report's to_json: kept as the record's report, its strategy named as printed, and its
// decision, as printed, goes in the decisions table beside it. `options` (settings_json) is kept
// with the GPU's driver and this Regime's version. The results are written to a file of the
// state folder first: where the store fails, that file stays, `report.store_failure` says so and
// no id comes back (results_keeper.hpp); no error of the store's is thrown.
std::optional<int64_t> keep_sweep(SweepReport& report, const std::string& kind,
                                  const nlohmann::json& json, const DatabaseLocation& db,
                                  const nlohmann::json& options = nlohmann::json::object());
// The same in a store the command holds open, the store's errors thrown.
int64_t keep_sweep(SweepReport& report, const std::string& kind, const nlohmann::json& json,
                   RunStore& store, const nlohmann::json& options);

// What a sweep's results file holds: {"kind", "report": `json`, "table_csv": the sweep table}.
nlohmann::json sweep_results_json(const SweepReport& report, const std::string& kind,
                                  const nlohmann::json& json);

}  // namespace regime::session
