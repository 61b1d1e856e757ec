#pragma once
// `regime report`: one run of the store (a probe by id, or the newest finished one matching a GPU
// and a workload; a sweep, sweep:ID; a study, study:ID; a control run, control:ID) with its trace
// files, drawn as a self-contained HTML page (src/report).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "session/results/runs.hpp"
#include "session/study/study.hpp"

namespace regime::session {

struct ReportRequest {
  std::optional<RunRef> run;  // a probe (ID, probe:ID), sweep:ID, study:ID or control:ID
  DatabaseLocation db;        // the run database the run is in
  // Without a run: the newest probe on a GPU whose name, UUID or device URI contains it. With
  // control:ID: which of the run's GPUs to draw (report::control_gpu_named).
  std::optional<std::string> gpu;
  std::optional<std::string> workload;  // matches the workload (substring)
  // With study:ID: the study's --out folder, for a study whose record names none (kept before the
  // store recorded it) or whose folder has moved.
  std::optional<std::filesystem::path> study_out;
  std::filesystem::path out;
  size_t columns = 1200;
};

struct ReportResult {
  int64_t run_id = 0;
  std::string run;  // "3" for a probe, "sweep:3", "study:3", "control:3"
  std::filesystem::path out;
  std::filesystem::path chart_library;
  size_t bytes = 0;
  size_t comparison_runs = 0;
  size_t timeline_points = 0;  // drawn, all series together
  size_t trace_points = 0;     // read, all series together
  size_t sweep_caps = 0;       // caps on the sweep's charts (a sweep's or a study's page)
};

// The charting library inlined into the page: $REGIME_CHART_JS, else
// data_dir()/report/echarts.min.js (scripts/deps.sh puts it there from report/package-lock.json).
std::filesystem::path chart_library_path();

// A study (`regime study --report FILE`): its probe's timeline, regime and evidence (each GPU's
// of a job's), the sweep (energy and time per step against the cap, the decision marked) and the
// runs of `db`, the store the study was kept in, beside it. `out_dir` is the study's --out folder
// where the probe traces were saved ("" for none).
ReportResult write_study_report(const StudyReport& study, const DatabaseLocation& db,
                                const std::filesystem::path& out, const std::string& out_dir,
                                size_t columns = 1200);

// Error NotFound when no run matches (naming what else of the store bears that id: a probe's id
// given as sweep:ID), its trace file is missing (named) or the library is missing,
// InvalidArgument when the run has no report or `run` names a decision (naming the sweep it
// decides), Io/Parse from the trace files and the kept tables. A control run is drawn from the
// trace it wrote as it went: its first GPU's timeline (of a job's, the first of --device), the
// controller's changes of the limit and the figures of its segments or evaluation windows
// (report/control_page.hpp). A sweep from its sweep table and its decision as kept
// (report/sweep.hpp: no timeline, a sweep keeps no trace). A study as write_study_report draws
// it, from its JSON, its sweep's table and the probe trace of its --out folder; a study run
// without --out is drawn without the timeline, saying so; a study of a job's GPUs with each GPU's
// timeline, regime and share of the decision.
ReportResult write_report(const ReportRequest& request);

}  // namespace regime::session
