#pragma once
// `regime runs`: what the run database holds (probes, sweeps, studies, decisions and controller
// runs), and
// a kept sweep decided again under another objective, without running it again.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "plan/objective.hpp"
#include "plan/recommend.hpp"
#include "present/decision_view.hpp"
#include "store/database_location.hpp"
#include "store/run_store.hpp"

namespace regime::session {

// "probe:12" or "12" (a probe), "sweep:3" (a sweep or a study's sweep), "study:2", "decision:5",
// "control:4" (a controller run). Error InvalidArgument.
// The CLI reads one (cli/run_options.hpp).
struct RunRef {
  enum class Kind { Probe, Sweep, Study, Decision, Control } kind = Kind::Probe;
  int64_t id = 0;
  std::string text;  // as written, for messages
};
inline constexpr const char* kRunRefForms =
    "ID, probe:ID, sweep:ID, study:ID, decision:ID or control:ID";
std::string to_string(RunRef::Kind kind);  // "probe", "sweep", ...
// The kind `name` names ("probe", "sweep", ...); nullopt for none.
std::optional<RunRef::Kind> run_kind_named(const std::string& name);

// Which results a listing keeps: `gpu` matches the GPU's name, its URI or its UUID, `workload`
// the workload's name or command line; both as a case-insensitive part of the text. Empty: any.
struct RunsFilter {
  std::string gpu;
  std::string workload;
};
bool matches(const RunsFilter& filter, const std::string& device, const std::string& gpu_name,
             const std::string& gpu_uuid, const std::string& workload);

struct RunsListing {
  std::string location;           // where it is, as RunStore::location() shows it
  bool on_server = false;         // a server store: its rows come from every node
  std::vector<RunRecord> probes;  // each newest first
  std::vector<SweepRecord> sweeps;
  std::vector<StudyRecord> studies;
  std::vector<DecisionRecord> decisions;
  std::vector<ControlRunRecord> control_runs;
};
// At most `limit` of each kind that the filter keeps (0: all). Nothing kept yet in the default
// store is an empty listing; a named file that is not there is Error NotFound.
RunsListing list_runs(const DatabaseLocation& db, size_t limit, const RunsFilter& filter = {});

using StoredResult =
    std::variant<RunRecord, SweepRecord, StudyRecord, DecisionRecord, ControlRunRecord>;
// Error NotFound naming the database when there is no such result.
StoredResult show_run(const DatabaseLocation& db, const RunRef& ref);

// One workload of a sweep table decided, with the probes it was decided from and its view.
struct TableDecision {
  plan::Recommendation recommendation;
  std::vector<plan::ProbeResult> probes;
  plan::DecisionView view;
};

// Every (workload, gpu) of a table decided by the rule of `regime recommend`; one whose table
// carries the default measured again (window "again", trace/sweep_table.hpp) is decided with both
// default windows, as its live sweep was. Error Parse when that row is not at the default (the
// highest cap).
std::vector<TableDecision> decide_table(const SweepTable& table, const plan::Objective& objective);

// The kept sweep's measurements decided under `objective` (the rule of `regime recommend`).
// The decision made again is kept in the decisions table (source "recommend").
struct Redecision {
  SweepRecord sweep;
  TableDecision decided;
  std::optional<int64_t> decision_id;
};
Redecision decide_again(const DatabaseLocation& db, int64_t sweep_id,
                        const plan::Objective& objective);

}  // namespace regime::session
