#include "session/results/report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "report/control_page.hpp"
#include "report/page.hpp"
#include "report/restore.hpp"
#include "report/sweep.hpp"
#include "session/results/runs.hpp"
#include "session/sweep/sweep_view.hpp"
#include "store/run_store.hpp"
#include "trace/chunked_trace.hpp"
#include "trace/csv.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

RunRecord pick_run(const ReportRequest& r, std::optional<int64_t> run_id,
                   const std::vector<RunRecord>& runs, const fs::path& db) {
  if (run_id) {
    for (const RunRecord& rec : runs)
      if (rec.id == *run_id) return rec;
    throw Error(ErrorKind::NotFound, fmt::format("no run {} in {}", *run_id, db.string()));
  }
  for (const RunRecord& rec : runs) {  // newest first
    if (rec.status != "done" || !rec.report.is_object()) continue;
    if (r.gpu && !contains(rec.gpu_name, *r.gpu) && !contains(rec.gpu_uuid, *r.gpu) &&
        !contains(rec.device, *r.gpu))
      continue;
    if (r.workload && !contains(rec.workload, *r.workload)) continue;
    return rec;
  }
  throw Error(
      ErrorKind::NotFound,
      fmt::format("no finished run in {}{}{}", db.string(),
                  r.gpu ? fmt::format(" on a GPU matching '{}'", *r.gpu) : "",
                  r.workload ? fmt::format(" of a workload matching '{}'", *r.workload) : ""));
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fmt::format("cannot read {}", p.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string now_utc() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

fs::path existing_library() {
  const fs::path lib = chart_library_path();
  if (!fs::exists(lib))
    throw Error(ErrorKind::NotFound,
                fmt::format("the charting library {} is missing: run scripts/deps.sh (it installs "
                            "report/package-lock.json with npm ci and copies ECharts there) or "
                            "set REGIME_CHART_JS to echarts.min.js",
                            lib.string()));
  return lib;
}

size_t count_points(const nlohmann::json& series, const char* key) {
  size_t n = 0;
  for (const auto& [name, s] : series.items()) n += s[key].get<size_t>();
  return n;
}

// The page of control:ID from the trace it wrote as it went.
ReportResult write_control_report(const ReportRequest& r, RunStore& store, int64_t id,
                                  const fs::path& lib) {
  const std::optional<ControlRunRecord> run = store.get_control_run(id);
  if (!run)
    throw Error(ErrorKind::NotFound, fmt::format("no control:{} in {}", id, store.path().string()));
  const size_t gpu = r.gpu ? report::control_gpu_named(*run, *r.gpu) : 0;
  const fs::path trace_file = report::control_trace_file(*run, gpu);
  if (!fs::exists(trace_file))
    throw Error(ErrorKind::NotFound,
                fmt::format("control:{}: its trace file {} is missing", id, trace_file.string()));
  report::PageOptions po;
  po.columns = r.columns;
  po.generated_utc = now_utc();
  const nlohmann::json page = report::build_control_page_data(
      *run, gpu, read_chunked_trace(trace_file), read_window_figures(trace_file), po);
  const std::string html = report::render_html(page, read_file(lib));
  write_file_atomic(r.out, html);

  ReportResult out;
  out.run_id = id;
  out.run = fmt::format("control:{}", id);
  out.out = r.out;
  out.chart_library = lib;
  out.bytes = html.size();
  out.timeline_points = count_points(page["timeline"]["series"], "points");
  out.trace_points = count_points(page["timeline"]["series"], "input_points");
  return out;
}

// The run `run` names: a probe's id, or a control run's; nullopt for the newest matching probe.
std::optional<RunRef> report_ref(const ReportRequest& r) {
  if (!r.run) return std::nullopt;
  const RunRef& ref = *r.run;
  if (ref.kind != RunRef::Kind::Probe && ref.kind != RunRef::Kind::Control)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("report: '{}' is a {}: regime report draws a probe (ID, probe:ID) or "
                            "a control run (control:ID); a study draws its own page with "
                            "`regime study --report FILE`",
                            ref.text, to_string(ref.kind)));
  return ref;
}

}  // namespace

fs::path chart_library_path() {
  if (const char* env = std::getenv("REGIME_CHART_JS"); env && *env) return env;
  return data_dir() / "report" / "echarts.min.js";
}

ReportResult write_report(const ReportRequest& r) {
  if (r.out.empty()) throw Error(ErrorKind::InvalidArgument, "report: an output file is needed");
  if (r.columns < 10)
    throw Error(ErrorKind::InvalidArgument, "report: at least 10 columns are needed");
  const std::optional<RunRef> ref = report_ref(r);
  const fs::path lib = existing_library();
  const fs::path db = r.db.path();
  // A server store says on connecting whether it is there; a file must exist to be read.
  if (!r.db.is_server() && !fs::exists(db))
    throw Error(ErrorKind::NotFound, fmt::format("no run database at {}", db.string()));
  RunStore store(r.db);
  if (ref && ref->kind == RunRef::Kind::Control)
    return write_control_report(r, store, ref->id, lib);
  if (ref && (r.gpu || r.workload))
    throw Error(ErrorKind::InvalidArgument,
                "report: --gpu and --workload pick the newest probe when no run is named; with "
                "a probe's id they pick nothing (with control:ID, --gpu picks one of its GPUs)");
  const std::vector<RunRecord> runs = store.list();
  const RunRecord run = pick_run(r, ref ? std::optional(ref->id) : std::nullopt, runs, db);
  if (run.trace_path.empty())
    throw Error(ErrorKind::NotFound, fmt::format("run {} has no trace file", run.id));
  std::optional<fs::path> steps;
  if (!run.steps_path.empty() && fs::exists(run.steps_path)) steps = run.steps_path;
  const Trace trace = load_trace(run.trace_path, steps);

  report::PageOptions po;
  po.columns = r.columns;
  po.generated_utc = now_utc();
  const nlohmann::json page = report::build_page_data(run, trace, runs, po);
  const std::string html = report::render_html(page, read_file(lib));
  write_file_atomic(r.out, html);

  ReportResult out;
  out.run_id = run.id;
  out.run = std::to_string(run.id);
  out.out = r.out;
  out.chart_library = lib;
  out.bytes = html.size();
  out.comparison_runs = page["comparison"]["rows"].size();
  out.timeline_points = count_points(page["timeline"]["series"], "points");
  out.trace_points = count_points(page["timeline"]["series"], "input_points");
  return out;
}

}  // namespace regime::session

namespace regime::session {

ReportResult write_study_report(const StudyReport& study, const fs::path& out,
                                const std::string& trace_path, size_t columns) {
  const fs::path lib = existing_library();
  RunRecord rec;  // the study's probe, shown as a run; it is not in the store (id 0)
  rec.device = study.device;
  rec.gpu_name = study.info.name;
  rec.gpu_uuid = study.info.uuid;
  rec.workload = study.workload;
  rec.status = "done";
  rec.started_at_utc = now_utc();
  rec.regime = to_string(study.regime.regime);
  rec.confidence = study.regime.confidence;
  rec.report = to_json(study.regime);
  rec.trace_path = trace_path.empty() ? "not saved (study --out DIR saves it)" : trace_path;
  std::vector<RunRecord> runs;
  if (fs::exists(RunStore::default_path())) runs = RunStore(RunStore::default_path()).list();

  report::PageOptions po;
  po.columns = columns;
  po.generated_utc = rec.started_at_utc;
  nlohmann::json page = report::build_page_data(rec, study.probe_trace, runs, po);
  page["title"] = fmt::format("Regime study: {} on {}", study.workload,
                              study.info.name.empty() ? study.device : study.info.name);
  if (study.sweep)
    page["sweep"] = report::sweep_section(
        study.sweep->outcome.probes, study.sweep->outcome.decision, decision_view(*study.sweep));
  else
    page["sweep_skipped"] = study.skipped;
  if (study.whole_run) {
    page["whole_run"] = to_json(*study.whole_run);
    page["whole_run"]["exit_status"] =
        study.exit_status ? nlohmann::json(*study.exit_status) : nlohmann::json();
    page["whole_run"]["unfinished"] =
        study.unfinished.empty() ? nlohmann::json() : nlohmann::json(study.unfinished);
  }
  // The sweep put the original limit back as the study ended, moments before this page.
  if (study.sweep && study.sweep->after.rfind("restored", 0) == 0) {
    const std::string gpu = fmt::format("{} ({})", study.info.name, study.info.uuid);
    page["restore"] = report::limit_restore_section(
        report::LimitRestored{gpu, study.sweep->info.current_limit_W, rec.started_at_utc}, {}, gpu);
  }
  const std::string html = report::render_html(page, read_file(lib));
  write_file_atomic(out, html);

  ReportResult result;
  result.out = out;
  result.chart_library = lib;
  result.bytes = html.size();
  result.comparison_runs = page["comparison"]["rows"].size();
  result.timeline_points = count_points(page["timeline"]["series"], "points");
  result.trace_points = count_points(page["timeline"]["series"], "input_points");
  return result;
}

}  // namespace regime::session
