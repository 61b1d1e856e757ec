#pragma once
// `regime report`: one run of the store (a probe by id, or the newest finished one matching a GPU
// and a workload; or a control run, control:ID) with its trace files, drawn as a self-contained
// HTML page (src/report).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "session/results/runs.hpp"
#include "session/study/study.hpp"

namespace regime::session {

struct ReportRequest {
  std::optional<RunRef> run;  // a probe (ID, probe:ID) or a control run (control:ID)
  DatabaseLocation db;        // the run database the run is in
  // Without a run: the newest probe on a GPU whose name, UUID or device URI contains it. With
  // control:ID: which of the run's GPUs to draw (report::control_gpu_named).
  std::optional<std::string> gpu;
  std::optional<std::string> workload;  // matches the workload (substring)
  std::filesystem::path out;
  size_t columns = 1200;
};

struct ReportResult {
  int64_t run_id = 0;
  std::string run;  // "3" for a probe, "control:3" for a control run
  std::filesystem::path out;
  std::filesystem::path chart_library;
  size_t bytes = 0;
  size_t comparison_runs = 0;
  size_t timeline_points = 0;  // drawn, all series together
  size_t trace_points = 0;     // read, all series together
};

// The charting library inlined into the page: $REGIME_CHART_JS, else
// data_dir()/report/echarts.min.js (scripts/deps.sh puts it there from report/package-lock.json).
std::filesystem::path chart_library_path();

// A study (`regime study --report FILE`): its probe's timeline, regime and evidence, the sweep
// (energy and time per step against the cap, the decision marked) and the runs of the default
// store beside it. `trace_path` names where the probe trace was saved, if anywhere.
ReportResult write_study_report(const StudyReport& study, const std::filesystem::path& out,
                                const std::string& trace_path, size_t columns = 1200);

// Error NotFound when no run matches, its trace file is missing or the library is missing,
// InvalidArgument when the run has no report or `run` names another kind (a sweep, a study),
// Io/Parse from the trace files. A control run is drawn from the trace it wrote as it went: its
// first GPU's timeline (of a job's, the first of --device), the controller's changes of the limit
// and the figures of its segments or evaluation windows (report/control_page.hpp).
ReportResult write_report(const ReportRequest& request);

}  // namespace regime::session
