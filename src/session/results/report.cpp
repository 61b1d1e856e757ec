#include "session/results/report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "report/control_page.hpp"
#include "report/page.hpp"
#include "report/restore.hpp"
#include "report/study_page.hpp"
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

// What else of the store bears `id`, for the message of a run that is not there: a probe's id
// given as sweep:ID, say.
std::string also_there(RunStore& store, RunRef::Kind asked, int64_t id) {
  std::vector<std::string> there;
  if (asked != RunRef::Kind::Probe && store.get(id)) there.push_back(std::to_string(id));
  if (asked != RunRef::Kind::Sweep && store.get_sweep(id))
    there.push_back(fmt::format("sweep:{}", id));
  if (asked != RunRef::Kind::Study && store.get_study(id))
    there.push_back(fmt::format("study:{}", id));
  if (asked != RunRef::Kind::Control && store.get_control_run(id))
    there.push_back(fmt::format("control:{}", id));
  if (there.empty()) return "; `regime runs` lists what it holds";
  return fmt::format("; it holds {} (`regime report {}` draws it; `regime runs` lists them all)",
                     fmt::join(there, " and "), there.front());
}

Error not_kept(RunStore& store, RunRef::Kind kind, int64_t id) {
  return Error(ErrorKind::NotFound,
               fmt::format("no {} in {}{}",
                           kind == RunRef::Kind::Probe ? fmt::format("run {}", id)
                                                       : fmt::format("{}:{}", to_string(kind), id),
                           store.path().string(), also_there(store, kind, id)));
}

RunRecord pick_run(const ReportRequest& r, std::optional<int64_t> run_id,
                   const std::vector<RunRecord>& runs, RunStore& store) {
  if (run_id) {
    for (const RunRecord& rec : runs)
      if (rec.id == *run_id) return rec;
    throw not_kept(store, RunRef::Kind::Probe, *run_id);
  }
  const fs::path& db = store.path();
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

// The page drawn with the library inlined, written whole to `out`, and what it holds.
ReportResult write_page(const nlohmann::json& page, const fs::path& out, const fs::path& lib) {
  const std::string html = report::render_html(page, read_file(lib));
  write_file_atomic(out, html);
  ReportResult result;
  result.out = out;
  result.chart_library = lib;
  result.bytes = html.size();
  if (page.contains("comparison")) result.comparison_runs = page["comparison"]["rows"].size();
  if (page.contains("sweep")) result.sweep_caps = page["sweep"]["points"].size();
  if (page["timeline"].is_object()) {
    result.timeline_points = count_points(page["timeline"]["series"], "points");
    result.trace_points = count_points(page["timeline"]["series"], "input_points");
  }
  return result;
}

// The page of control:ID from the trace it wrote as it went.
ReportResult write_control_report(const ReportRequest& r, RunStore& store, int64_t id,
                                  const fs::path& lib) {
  const std::optional<ControlRunRecord> run = store.get_control_run(id);
  if (!run) throw not_kept(store, RunRef::Kind::Control, id);
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
  ReportResult out = write_page(page, r.out, lib);
  out.comparison_runs = 0;  // a control run's page leaves the comparison out
  out.run_id = id;
  out.run = fmt::format("control:{}", id);
  return out;
}

// The regime the store knows for a kept sweep, and who named it: its study's probe, else the
// sweep itself (an adaptive search names one).
std::pair<std::optional<std::string>, std::string> regime_of_sweep(RunStore& store,
                                                                   const SweepRecord& sweep) {
  if (sweep.kind == "study")
    for (const StudyRecord& study : store.list_studies())
      if (study.sweep_id == sweep.id && study.regime)
        return {study.regime, fmt::format("study:{}'s probe", study.id)};
  if (sweep.report.is_object() && sweep.report.contains("regime") &&
      sweep.report["regime"].is_string())
    return {sweep.report["regime"].get<std::string>(), "the sweep's search"};
  return {std::nullopt, ""};
}

// The page of sweep:ID, from its table and its decision as the store kept them.
ReportResult write_sweep_report(const ReportRequest& r, RunStore& store, int64_t id,
                                const fs::path& lib) {
  const std::optional<SweepRecord> sweep = store.get_sweep(id);
  if (!sweep) throw not_kept(store, RunRef::Kind::Sweep, id);
  report::PageOptions po;
  po.columns = r.columns;
  po.generated_utc = now_utc();
  const auto [regime, named_by] = regime_of_sweep(store, *sweep);
  nlohmann::json page = report::sweep_page_data(*sweep, regime, store.list(), po);
  page["regime"]["named_by"] = named_by;
  ReportResult out = write_page(page, r.out, lib);
  out.run_id = id;
  out.run = fmt::format("sweep:{}", id);
  return out;
}

// The probe's trace a study kept with --out (the first GPU's of a job's), or why there is none.
// Error NotFound naming the file when the study saved one that is gone.
std::optional<fs::path> kept_probe_trace(const StudyRecord& study, std::string& why_none) {
  const nlohmann::json& o = study.provenance.options;
  if (!o.is_object() || !o.contains("out_dir") || !o["out_dir"].is_string()) {
    why_none = fmt::format(
        "study:{} was run without --out, so its probe's trace was not saved "
        "(`regime study --out DIR` keeps it for this page)",
        study.id);
    return std::nullopt;
  }
  const nlohmann::json& job = study.report.is_object() ? study.report["job"] : nlohmann::json();
  const bool several = job.is_object() && job.contains("devices") && job["devices"].is_array();
  const fs::path file = fs::path(o["out_dir"].get<std::string>()) /
                        (several ? "probe-gpu0.trace.csv" : "probe.trace.csv");
  if (!fs::exists(file))
    throw Error(ErrorKind::NotFound,
                fmt::format("study:{}: its probe trace {} is missing", study.id, file.string()));
  return file;
}

std::string text_or_empty(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The study's probe as a run for the page: its regime's JSON as the report.
RunRecord study_probe_run(const std::string& device, const std::string& gpu_name,
                          const std::string& gpu_uuid, const std::string& workload,
                          const nlohmann::json& regime) {
  RunRecord rec;  // not in the store as a probe (id 0)
  rec.device = device;
  rec.gpu_name = gpu_name;
  rec.gpu_uuid = gpu_uuid;
  rec.workload = workload;
  rec.status = "done";
  rec.regime = text_or_empty(regime, "regime");
  if (regime.contains("confidence") && regime["confidence"].is_number())
    rec.confidence = regime["confidence"].get<double>();
  rec.report = regime;
  return rec;
}

// The page of study:ID from what the store kept: the study's JSON, its sweep's table and the
// probe trace its --out folder holds.
ReportResult write_kept_study_report(const ReportRequest& r, RunStore& store, int64_t id,
                                     const fs::path& lib) {
  const std::optional<StudyRecord> study = store.get_study(id);
  if (!study) throw not_kept(store, RunRef::Kind::Study, id);
  const nlohmann::json& j = study->report;
  if (!j.is_object() || !j.contains("regime") || !j["regime"].is_object())
    throw Error(ErrorKind::Parse, fmt::format("study:{} kept no regime to draw", id));
  report::StudyPage page;
  page.title = fmt::format("Regime study:{}: {} on {}", id, study->workload,
                           study->gpu_name.empty() ? study->device : study->gpu_name);
  page.probe = study_probe_run(study->device, study->gpu_name, study->gpu_uuid, study->workload,
                               j["regime"]);
  page.probe.started_at_utc = study->started_at_utc;
  std::optional<Trace> trace;
  if (const std::optional<fs::path> file = kept_probe_trace(*study, page.no_trace)) {
    std::optional<fs::path> steps = sibling_steps_path(*file);
    if (steps && !fs::exists(*steps)) steps.reset();
    trace = load_trace(*file, steps);
    page.probe.trace_path = file->string();
    page.trace = &*trace;
  } else {
    page.probe.trace_path = "not saved (study --out DIR saves it)";
  }
  if (study->sweep_id) {
    const std::optional<SweepRecord> sweep = store.get_sweep(*study->sweep_id);
    if (!sweep) throw not_kept(store, RunRef::Kind::Sweep, *study->sweep_id);
    page.sweep = report::kept_sweep_section(*sweep);
  }
  page.sweep_skipped = text_or_empty(j, "skipped_reason");
  if (j.contains("job") && j["job"].is_object() && j["job"].contains("reached"))
    page.whole_run = j["job"];
  page.after = text_or_empty(j, "after");
  // The probe ran at the limit the sweep put back: its trace says which.
  if (trace && page.after.rfind("restored", 0) == 0)
    for (const Sample& s : trace->samples)
      if (s.limit_W) {
        page.restored =
            report::LimitRestored{fmt::format("{} ({})", study->gpu_name, study->gpu_uuid),
                                  *s.limit_W, study->started_at_utc};
        break;
      }
  report::PageOptions po;
  po.columns = r.columns;
  po.generated_utc = now_utc();
  ReportResult out = write_page(report::study_page_data(page, store.list(), po), r.out, lib);
  out.run_id = id;
  out.run = fmt::format("study:{}", id);
  return out;
}

// The run `run` names; nullopt for the newest matching probe.
std::optional<RunRef> report_ref(const ReportRequest& r) {
  if (!r.run) return std::nullopt;
  if ((r.gpu && r.run->kind != RunRef::Kind::Control) || r.workload)
    throw Error(ErrorKind::InvalidArgument,
                "report: --gpu and --workload pick the newest probe when no run is named; with "
                "a run named they pick nothing (with control:ID, --gpu picks one of its GPUs)");
  return r.run;
}

// A decision has no page of its own: the sweep it decides has, and the message names it.
Error decision_refused(RunStore& store, const RunRef& ref) {
  const std::optional<DecisionRecord> d = store.get_decision(ref.id);
  const std::string sweep =
      d && d->sweep_id ? fmt::format("sweep:{}", *d->sweep_id) : std::string("sweep:ID");
  return Error(ErrorKind::InvalidArgument,
               fmt::format("report: '{}' is a decision: regime report draws the sweep it decides "
                           "(`regime report {}`), a probe (ID, probe:ID), a study (study:ID) or "
                           "a control run (control:ID)",
                           ref.text, sweep));
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
  // A server store says on connecting whether it is there; a file must exist to be read.
  if (!r.db.is_server() && !fs::exists(r.db.path()))
    throw Error(ErrorKind::NotFound, fmt::format("no run database at {}", r.db.path().string()));
  RunStore store(r.db);
  if (ref && ref->kind == RunRef::Kind::Control)
    return write_control_report(r, store, ref->id, lib);
  if (ref && ref->kind == RunRef::Kind::Decision) throw decision_refused(store, *ref);
  if (ref && ref->kind == RunRef::Kind::Sweep) return write_sweep_report(r, store, ref->id, lib);
  if (ref && ref->kind == RunRef::Kind::Study)
    return write_kept_study_report(r, store, ref->id, lib);
  const std::vector<RunRecord> runs = store.list();
  const RunRecord run = pick_run(r, ref ? std::optional(ref->id) : std::nullopt, runs, store);
  if (run.trace_path.empty())
    throw Error(ErrorKind::NotFound, fmt::format("run {} has no trace file", run.id));
  std::optional<fs::path> steps;
  if (!run.steps_path.empty() && fs::exists(run.steps_path)) steps = run.steps_path;
  const Trace trace = load_trace(run.trace_path, steps);

  report::PageOptions po;
  po.columns = r.columns;
  po.generated_utc = now_utc();
  ReportResult out = write_page(report::build_page_data(run, trace, runs, po), r.out, lib);
  out.run_id = run.id;
  out.run = std::to_string(run.id);
  return out;
}

}  // namespace regime::session

namespace regime::session {

ReportResult write_study_report(const StudyReport& study, const fs::path& out,
                                const std::string& trace_path, size_t columns) {
  const fs::path lib = existing_library();
  report::StudyPage page;
  page.title = fmt::format("Regime study: {} on {}", study.workload,
                           study.info.name.empty() ? study.device : study.info.name);
  page.probe = study_probe_run(study.device, study.info.name, study.info.uuid, study.workload,
                               to_json(study.regime));
  page.probe.started_at_utc = now_utc();
  page.probe.trace_path = trace_path.empty() ? "not saved (study --out DIR saves it)" : trace_path;
  page.trace = &study.probe_trace;
  if (study.sweep) {
    page.sweep = report::sweep_section(study.sweep->outcome.probes, study.sweep->outcome.decision,
                                       decision_view(*study.sweep));
    page.after = study.sweep->after;
  }
  page.sweep_skipped = study.skipped;
  if (study.whole_run) {
    page.whole_run = to_json(*study.whole_run);
    page.whole_run["exit_status"] =
        study.exit_status ? nlohmann::json(*study.exit_status) : nlohmann::json();
    page.whole_run["unfinished"] =
        study.unfinished.empty() ? nlohmann::json() : nlohmann::json(study.unfinished);
  }
  // The sweep put the original limit back as the study ended, moments before this page.
  if (study.sweep && study.sweep->after.rfind("restored", 0) == 0)
    page.restored =
        report::LimitRestored{fmt::format("{} ({})", study.info.name, study.info.uuid),
                              study.sweep->info.current_limit_W, page.probe.started_at_utc};
  std::vector<RunRecord> runs;
  if (fs::exists(RunStore::default_path())) runs = RunStore(RunStore::default_path()).list();
  report::PageOptions po;
  po.columns = columns;
  po.generated_utc = page.probe.started_at_utc;
  return write_page(report::study_page_data(page, runs, po), out, lib);
}

}  // namespace regime::session
