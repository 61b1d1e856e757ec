#pragma once
// `regime runs`: what the run database holds (probes, and sweeps with the studies' sweeps), and
// a kept sweep decided again under another objective, without running it again.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "plan/objective.hpp"
#include "plan/recommend.hpp"
#include "store/run_store.hpp"

namespace regime::session {

// "probe:12" or "12" (a probe), "sweep:3" (a sweep or a study's sweep). Error InvalidArgument.
struct RunRef {
  enum class Kind { Probe, Sweep } kind = Kind::Probe;
  int64_t id = 0;
};
RunRef parse_run_ref(const std::string& text);

struct RunsListing {
  std::string db;
  std::vector<RunRecord> probes;    // newest first
  std::vector<SweepRecord> sweeps;  // newest first
};
// At most `limit` of each (0: all); an empty `db` is RunStore::default_path().
RunsListing list_runs(const std::string& db, size_t limit);

// Error NotFound naming the database when there is no such run.
std::variant<RunRecord, SweepRecord> show_run(const std::string& db, const RunRef& ref);

// The kept sweep's measurements decided under `objective` (the rule of `regime recommend`).
// The decision made again is kept in the decisions table (source "recommend").
struct Redecision {
  SweepRecord sweep;
  plan::Recommendation recommendation;
  std::optional<int64_t> decision_id;
};
Redecision decide_again(const std::string& db, int64_t sweep_id, const plan::Objective& objective);

}  // namespace regime::session
