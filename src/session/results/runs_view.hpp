#pragma once
// The presenters of `regime runs`: the JSON and the text of a listing and of one kept result,
// both built from the same records.
#include <nlohmann/json.hpp>
#include <string>

#include "session/results/runs.hpp"

namespace regime::session {

// {"db", "filter", "probes", "sweeps", "studies", "decisions", "control_runs"}: each row's
// summary.
nlohmann::json to_json(const RunsListing& listing, const RunsFilter& filter);

// A count of each kind, then one row per result, newest first within each kind, with a HOST
// column where the rows come from several machines or a server store.
std::string to_text(const RunsListing& listing, const RunsFilter& filter);

// One result in full: its summary with the whole record (the command's own JSON), or a sweep
// with its table.
nlohmann::json to_json(const StoredResult& result);

// One result: its summary one field a line with the advice or reason it carries; a sweep with
// its decision and its table of measured caps.
std::string to_text(const StoredResult& result);

}  // namespace regime::session
