#include "session/results/report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "report/control_page.hpp"
#include "report/page.hpp"
#include "report/restore.hpp"
#include "report/study_page.hpp"
#include "report/sweep.hpp"
#include "session/results/runs.hpp"
#include "session/study/study_probe.hpp"
#include "session/sweep/sweep_view.hpp"
#include "store/run_store.hpp"
#include "trace/chunked_trace.hpp"
#include "trace/csv.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

// A study page's trace path where the study kept no probe trace.
constexpr const char* kTraceNotSaved = "not saved (study --out DIR saves it)";

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
  // A job's page draws each GPU's timeline in its own section.
  std::vector<const nlohmann::json*> timelines = {&page["timeline"]};
  if (page.contains("gpus"))
    for (const nlohmann::json& g : page["gpus"]) timelines.push_back(&g["timeline"]);
  for (const nlohmann::json* t : timelines)
    if (t->is_object()) {
      result.timeline_points += count_points((*t)["series"], "points");
      result.trace_points += count_points((*t)["series"], "input_points");
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

// The GPUs of a kept study of a job's GPUs: its JSON's "job"."gpus" (empty for one GPU).
nlohmann::json kept_job_gpus(const StudyRecord& study) {
  const nlohmann::json job =
      study.report.is_object() ? study.report.value("job", nlohmann::json()) : nlohmann::json();
  const nlohmann::json gpus =
      job.is_object() ? job.value("gpus", nlohmann::json()) : nlohmann::json();
  return gpus.is_array() && gpus.size() > 1 ? gpus : nlohmann::json::array();
}

// The --out folder a kept study saved its probe traces in: `given` (report --study-out), else
// the one its record names; none, saying why in `why_none`, for a study run without --out or
// kept before the store recorded the folder (then how to draw it).
std::optional<fs::path> kept_out_dir(const StudyRecord& study, const std::optional<fs::path>& given,
                                     std::string& why_none) {
  if (given) return given;
  const nlohmann::json& o = study.provenance.options;
  if (o.is_object() && o.contains("out_dir") && o["out_dir"].is_string())
    return fs::path(o["out_dir"].get<std::string>());
  const bool job = !kept_job_gpus(study).empty();
  if (o.is_object() && o.contains("out_dir"))  // recorded as none: run without --out
    why_none = fmt::format(
        "study:{} was run without --out, so its probe's trace was not saved "
        "(`regime study --out DIR` keeps it for this page)",
        study.id);
  else
    why_none = fmt::format(
        "study:{} was kept before the run store recorded a study's --out folder, so this page "
        "cannot find its probe trace{}: if it was run with --out DIR, `regime report study:{} "
        "--study-out DIR` draws the timeline from {}",
        study.id, job ? "s" : "", study.id,
        job ? "DIR/probe-gpu0.trace.csv, DIR/probe-gpu1.trace.csv, ..." : "DIR/probe.trace.csv");
  return std::nullopt;
}

// The probe's trace of GPU `gpu` in the study's --out folder. Error NotFound naming the file when
// it is not there.
fs::path kept_probe_trace(const StudyRecord& study, const fs::path& out_dir, size_t gpu) {
  const size_t gpus = std::max<size_t>(1, kept_job_gpus(study).size());
  const fs::path file = probe_trace_file(out_dir.string(), gpu, gpus);
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

// "NVIDIA H200 (GPU-...)", or for a job's GPUs "2x NVIDIA H200 (GPU-a, GPU-b)".
std::string gpus_label(const std::string& name, const std::vector<report::StudyGpu>& gpus,
                       const std::string& uuid) {
  if (gpus.empty()) return fmt::format("{} ({})", name, uuid);
  std::vector<std::string> uuids;
  for (const report::StudyGpu& g : gpus)
    uuids.push_back(g.gpu_uuid.empty() ? g.device : g.gpu_uuid);
  return fmt::format("{} ({})", name, fmt::join(uuids, ", "));
}

// A kept probe trace read whole (its steps file where it is still there).
Trace read_kept_trace(const fs::path& file) {
  std::optional<fs::path> steps = sibling_steps_path(file);
  if (steps && !fs::exists(*steps)) steps.reset();
  return load_trace(file, steps);
}

// The probe's trace of GPU `gpu` in `out_dir`, read into `traces` (kept alive for the page), and
// its path; a null trace where there is no folder.
std::pair<const Trace*, std::string> kept_trace_of(const StudyRecord& study,
                                                   const std::optional<fs::path>& out_dir,
                                                   size_t gpu, std::deque<Trace>& traces) {
  if (!out_dir) return {nullptr, kTraceNotSaved};
  const fs::path file = kept_probe_trace(study, *out_dir, gpu);
  traces.push_back(read_kept_trace(file));
  return {&traces.back(), file.string()};
}

// Each GPU of a kept study of a job's GPUs, as its JSON's "job" holds them, with the traces its
// --out folder holds; the GPU whose regime named the job (the one the study names, else, for a
// study kept before it named one, the first of the job's regime, as the study picks it).
void add_kept_job_gpus(const StudyRecord& study, const std::optional<fs::path>& out_dir,
                       report::StudyPage& page, std::deque<Trace>& traces) {
  const nlohmann::json gpus = kept_job_gpus(study);
  const std::string named = text_or_empty(study.report["job"], "regime_device");
  const std::string job_regime = text_or_empty(study.report["regime"], "regime");
  std::optional<size_t> named_gpu;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const nlohmann::json& g = gpus[i];
    report::StudyGpu gpu{.device = text_or_empty(g, "device"),
                         .gpu_name = text_or_empty(g, "gpu"),
                         .gpu_uuid = text_or_empty(g, "uuid"),
                         .regime = g,
                         .trace = nullptr,
                         .trace_path = {}};
    std::tie(gpu.trace, gpu.trace_path) = kept_trace_of(study, out_dir, i, traces);
    const bool names_job =
        named.empty() ? text_or_empty(g, "regime") == job_regime : gpu.device == named;
    if (names_job && !named_gpu) named_gpu = i;
    page.gpus.push_back(std::move(gpu));
  }
  page.regime_gpu = named_gpu.value_or(0);
  page.job_measurement = study.report["job"].value("measurement", nlohmann::json());
  page.probe.trace_path = fmt::format("one per GPU, below ({} GPUs)", gpus.size());
}

// The page of study:ID from what the store kept: the study's JSON, its sweep's table and the
// probe traces its --out folder holds (every GPU's of a job's).
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
  std::deque<Trace> traces;
  const std::optional<fs::path> out_dir = kept_out_dir(*study, r.study_out, page.no_trace);
  if (!kept_job_gpus(*study).empty())
    add_kept_job_gpus(*study, out_dir, page, traces);
  else
    std::tie(page.trace, page.probe.trace_path) = kept_trace_of(*study, out_dir, 0, traces);
  if (study->sweep_id) {
    const std::optional<SweepRecord> sweep = store.get_sweep(*study->sweep_id);
    if (!sweep) throw not_kept(store, RunRef::Kind::Sweep, *study->sweep_id);
    page.sweep = report::kept_sweep_section(*sweep);
    if (sweep->report.is_object())
      page.per_gpu_sweep = sweep->report.value("per_gpu", nlohmann::json());
  }
  page.sweep_skipped = text_or_empty(j, "skipped_reason");
  if (j.contains("job") && j["job"].is_object() && j["job"].contains("reached"))
    page.whole_run = j["job"];
  page.after = text_or_empty(j, "after");
  // The probe ran at the limit the sweep put back: its trace (a job's first GPU's) says which.
  if (!traces.empty() && page.after.rfind("restored", 0) == 0)
    for (const Sample& s : traces.front().samples)
      if (s.limit_W) {
        page.restored =
            report::LimitRestored{gpus_label(study->gpu_name, page.gpus, study->gpu_uuid),
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
  if (r.study_out && (!r.run || r.run->kind != RunRef::Kind::Study))
    throw Error(ErrorKind::InvalidArgument,
                "report: --study-out names a study's --out folder: give it with study:ID");
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

namespace {

// Each GPU of a job's study for its section of the page: its regime, its probe trace and where
// that trace was saved.
std::vector<report::StudyGpu> study_job_gpus(const StudyReport& study, const std::string& out_dir) {
  std::vector<report::StudyGpu> gpus;
  const size_t n = study.gpu_regimes.size();
  for (size_t i = 0; i < n && i < study.job_probe_traces.size(); ++i)
    gpus.push_back(
        {.device = study.job_devices.at(i),
         .gpu_name = i < study.job_infos.size() ? study.job_infos[i].name : study.info.name,
         .gpu_uuid = i < study.job_infos.size() ? study.job_infos[i].uuid : std::string(),
         .regime = to_json(study.gpu_regimes[i]),
         .trace = &study.job_probe_traces[i],
         .trace_path =
             out_dir.empty() ? kTraceNotSaved : probe_trace_file(out_dir, i, n).string()});
  return gpus;
}

// The runs beside the study on its page: those of the store it was kept in. None where that store
// failed to keep it (it may not open at all), or where a file store was never made.
std::vector<RunRecord> runs_beside(const StudyReport& study, const DatabaseLocation& db) {
  if (study.store_failure) return {};
  if (!db.is_server() && !fs::exists(db.path())) return {};
  return RunStore(db).list();
}

}  // namespace

ReportResult write_study_report(const StudyReport& study, const DatabaseLocation& db,
                                const fs::path& out, const std::string& out_dir, size_t columns) {
  const fs::path lib = existing_library();
  report::StudyPage page;
  const bool job = study.gpu_regimes.size() > 1;
  const std::string gpu_name =
      job ? fmt::format("{}x {}", study.gpu_regimes.size(), study.info.name) : study.info.name;
  page.title = fmt::format("Regime study: {} on {}", study.workload,
                           gpu_name.empty() ? study.device : gpu_name);
  page.probe = study_probe_run(study.device, gpu_name, job ? std::string() : study.info.uuid,
                               study.workload, to_json(study.regime));
  page.probe.started_at_utc = now_utc();
  page.probe.trace_path =
      out_dir.empty() ? kTraceNotSaved
      : job           ? fmt::format("one per GPU, below ({} GPUs)", study.gpu_regimes.size())
                      : probe_trace_file(out_dir, 0, 1).string();
  page.trace = &study.probe_trace;
  if (job) {
    page.gpus = study_job_gpus(study, out_dir);
    page.regime_gpu = study.regime_gpu;
    if (study.job_measurement) page.job_measurement = regime::to_json(*study.job_measurement);
  }
  if (study.sweep) {
    page.sweep = report::sweep_section(study.sweep->outcome.probes, study.sweep->outcome.decision,
                                       decision_view(*study.sweep));
    page.per_gpu_sweep = study.sweep->per_gpu;
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
        report::LimitRestored{gpus_label(gpu_name, page.gpus, study.info.uuid),
                              study.sweep->info.current_limit_W, page.probe.started_at_utc};
  report::PageOptions po;
  po.columns = columns;
  po.generated_utc = page.probe.started_at_utc;
  return write_page(report::study_page_data(page, runs_beside(study, db), po), out, lib);
}

}  // namespace regime::session
