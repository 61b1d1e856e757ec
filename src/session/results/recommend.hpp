#pragma once
// `regime recommend`: the decision for every workload of a sweep table, or for a sweep kept in the
// run database, by the rule `regime sweep` applies to its own measurements.
#include <optional>
#include <string>
#include <vector>

#include "plan/objective.hpp"
#include "session/results/runs.hpp"

namespace regime::session {

struct RecommendRequest {
  std::string sweep_file;     // a sweep table (CSV); or
  std::optional<RunRef> run;  // a kept sweep, sweep:ID
  DatabaseLocation db;        // the run database `run` is in
  plan::Objective objective;  // plan::kDefaultObjective
};

struct RecommendReport {
  std::string source;  // the table's path, or the kept sweep and the objective it was decided under
  std::string objective;  // the objective's canonical spelling
  std::vector<TableDecision> decided;
};

// Error InvalidArgument for neither or both of
// `sweep_file` and `run`, and for a `run` that is not a sweep. A kept sweep decided again is kept
// in the decisions table (decide_again).
RecommendReport recommend(const RecommendRequest& request);

}  // namespace regime::session
