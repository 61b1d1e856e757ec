#include "session/probe/probe.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "analysis/measure.hpp"
#include "analysis/probe_regime.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/paths.hpp"
#include "common/utc_time.hpp"
#include "session/probe/probe_view.hpp"
#include "session/settings.hpp"
#include "session/site/command_gpus.hpp"
#include "session/site/site.hpp"
#include "trace/csv.hpp"

namespace regime::session {

namespace fs = std::filesystem;

double sample_ms_for(const ProbeRequest& r, bool simulated) {
  return r.sample_ms.value_or(simulated ? kSimulatedSampleMs : kWallClockSampleMs);
}

double energy_period_s_for(const ProbeRequest& r, bool simulated) {
  return r.energy_period_s.value_or(simulated ? kSimulatedEnergyPeriod_s
                                              : kWallClockEnergyPeriod_s);
}

namespace {

constexpr const char* kProbeExample = "regime probe --device nvml:0 -- python3 train.py";

struct TracePaths {
  fs::path trace, steps, power;
};

TracePaths trace_paths(const ProbeRequest& r, int64_t run_id) {
  fs::path trace = r.trace_out.empty()
                       ? state_dir() / "runs" / fmt::format("run-{}.trace.csv", run_id)
                       : fs::path(r.trace_out);
  auto steps = sibling_steps_path(trace);
  auto power = sibling_power_path(trace);
  return {trace, steps ? *steps : fs::path(trace.string() + ".steps.csv"),
          power ? *power : fs::path(trace.string() + ".power.csv")};
}

void validate(const ProbeRequest& r) {
  session::validate(r.workload, kProbeExample);
  validate_run_length(r.seconds, r.sample_ms.value_or(kSimulatedSampleMs), r.warmup_s);
  if (r.energy_period_s && !(*r.energy_period_s >= 0.1 && *r.energy_period_s <= 60))
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--energy-period-s must be in [0.1, 60] s, got {}", *r.energy_period_s));
}

nlohmann::json options_json(const ProbeRequest& r, bool simulated) {
  return {{"seconds", r.seconds},
          {"sample_ms", sample_ms_for(r, simulated)},
          {"energy_period_s", energy_period_s_for(r, simulated)},
          {"no_steps", r.no_steps},
          {"warmup_s", r.warmup_s ? nlohmann::json(*r.warmup_s) : nullptr},
          {"step_regex", r.workload.step_regex ? nlohmann::json(*r.workload.step_regex) : nullptr}};
}

// What the run itself adds to the report: where things went and what it cost.
nlohmann::json run_json(const RunRecord& rec, const std::string& db_location, const Trace& trace,
                        const RunStats& stats, bool simulated, bool stopped_at_limit) {
  return {{"run_id", rec.id},
          {"device", rec.device},
          {"gpu", rec.gpu_name},
          {"workload", rec.workload},
          {"exit_status", rec.exit_status ? nlohmann::json(*rec.exit_status) : nullptr},
          {"stopped_at_time_limit", stopped_at_limit},
          {"duration_s", stats.t_end_s - stats.t_start_s},
          {"samples", trace.samples.size()},
          {"step_markers", trace.steps.size()},
          {"trace", rec.trace_path},
          {"steps_file", rec.steps_path},
          {"db", db_location},
          // Transient device errors: reads retried, and reads given up (that field missing).
          {"read_retries", stats.read_retries},
          {"failed_reads", stats.failed_reads},
          {"sampler_cpu_s", simulated ? nlohmann::json(nullptr) : nlohmann::json(stats.cpu_s)},
          // The process's CPU time (all threads) over the run's wall time: the sampler's own
          // cost, as the workload is another process. Meaningless on a simulated clock.
          {"sampler_cpu_pct", simulated || stats.wall_s <= 0
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(100.0 * stats.cpu_s / stats.wall_s)}};
}

RunRecord new_record(const ProbeRequest& r, const GpuInfo& info, double started_at_s,
                     bool simulated) {
  RunRecord rec;
  rec.started_at_s = started_at_s;
  rec.started_at_utc = utc_now_iso();
  rec.device = r.device.text;
  rec.gpu_name = info.name;
  rec.gpu_uuid = info.uuid;
  rec.workload = r.workload.display_name();
  rec.options = options_json(r, simulated);
  return rec;
}

MeasureOptions measure_options(const ProbeRequest& r) {
  MeasureOptions mo;
  mo.use_steps = !r.no_steps;
  if (r.warmup_s) {
    mo.detect_steady_state = false;
    mo.warmup_s = *r.warmup_s;
  }
  return mo;
}

// How far to trust the figures.
void add_warnings(const ProbeRequest& r, bool is_command, const Trace& trace,
                  const RegimeReport& report, std::vector<std::string>& out) {
  if (is_command && !r.no_steps && trace.steps.empty())
    out.push_back(
        "no step markers arrived, so the figures are per second; mark steps with "
        "python/regime_step (REGIME_STEP_SOCKET) or --step-regex, or pass --no-steps");
  if (report.evidence.value("short_run", false))
    out.push_back(fmt::format(
        "warning: the steady window is short ({:.1f} s, {} steps; classify wants at least {} s "
        "and {} steps): treat this run's figures as rough",
        report.measurement.window_end_s - report.measurement.window_start_s,
        report.measurement.steps, kShortRun_s, kShortRunSteps));
}

// "out.trace.csv" -> "out-gpu1.trace.csv": one trace per GPU of a job beside the name given.
std::string per_gpu_trace_out(const std::string& given, const GpuInfo& info) {
  if (given.empty()) return given;
  const std::string tag = fmt::format("-gpu{}", info.index);
  const std::string ext = ".trace.csv";
  if (given.size() > ext.size() && given.compare(given.size() - ext.size(), ext.size(), ext) == 0)
    return given.substr(0, given.size() - ext.size()) + tag + ext;
  return given + tag;
}

// The GPUs of one probe, opened through the site: one, or every GPU of one job (real ones, each
// with its own record and trace).
struct ProbeGpus {
  RunSite site;
  bool job = false;
};

// Each GPU's run record, kept as running before the run (a crash still leaves the trace
// findable); returns where each GPU's files go.
std::vector<TracePaths> start_records(const ProbeRequest& r, ProbeGpus& set, RunStore& store,
                                      std::vector<ProbeReport>& gpus) {
  std::vector<TracePaths> paths;
  gpus.resize(set.site.gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    ProbeRequest ri = r;
    if (set.job) {
      ri.device.text = set.site.targets[i].uri();
      ri.trace_out = per_gpu_trace_out(r.trace_out, set.site.infos[i]);
    }
    RunRecord& rec = gpus[i].record;
    rec = new_record(ri, set.site.infos[i], set.site.targets[i].wall().unix_now_s(),
                     set.site.simulated);
    if (set.job) rec.options["job_devices"] = r.device.text;
    rec.id = store.insert(rec);
    paths.push_back(trace_paths(ri, rec.id));
    rec.trace_path = fs::absolute(paths[i].trace).string();
    rec.steps_path = fs::absolute(paths[i].steps).string();
    store.update(rec);
  }
  return paths;
}

// One run over every GPU of the set: each GPU's samples go to its trace file as they come, the
// shared steps to every GPU's steps file, and the progress is handed on once a tick.
std::vector<Trace> record_run(const ProbeRequest& r, ProbeGpus& set, Workload& work,
                              JobProcessWatch& watch, const std::vector<TracePaths>& paths,
                              RunStats& stats) {
  const size_t n = set.site.gpus.size();
  std::vector<std::unique_ptr<TraceCsvWriter>> writers;
  std::vector<std::unique_ptr<StepsCsvWriter>> step_writers;
  for (const TracePaths& p : paths) {
    if (p.trace.has_parent_path()) create_output_dirs(p.trace.parent_path());
    writers.push_back(std::make_unique<TraceCsvWriter>(p.trace));
    step_writers.push_back(std::make_unique<StepsCsvWriter>(p.steps));
  }
  RunOptions o;
  o.duration_s = r.seconds;
  o.sample_period_s = sample_ms_for(r, set.site.simulated) / 1000.0;
  o.energy_period_s = energy_period_s_for(r, set.site.simulated);
  if (!set.site.simulated) o.drain_period_s = kWallClockDrainPeriod_s;
  // The loop hands over each tick's samples in the order of the GPUs.
  size_t next_lane = 0;
  ProbeProgress progress;
  progress.total_s = r.seconds;
  std::optional<double> first_t_s;
  o.on_sample = [&](const Sample& s) {
    writers[next_lane]->append(s);
    next_lane = (next_lane + 1) % n;
    if (next_lane != 0) return;
    watch.maybe_check(work, s.t_s);
    if (!r.on_progress) return;
    if (!first_t_s) first_t_s = s.t_s;
    progress.elapsed_s = s.t_s - *first_t_s;
    progress.power_W = s.power_W ? s.power_W : s.power_avg_W;
    progress.temp_C = s.temp_C;
    r.on_progress(progress);
  };
  o.on_step = [&](const Step& s) {
    for (auto& w : step_writers) w->append(s);
    ++progress.steps;
  };
  std::vector<Trace> traces = run(set.site.gpus, work, o, set.site.targets.front().clock(), &stats);
  for (size_t i = 0; i < n; ++i) {
    writers[i]->close();
    step_writers[i]->close();
    if (!traces[i].power_points.empty()) write_power_csv(paths[i].power, traces[i].power_points);
  }
  return traces;
}

// Why one GPU's trace named no regime: too short to measure, or an error of the analysis.
struct Unmeasured {
  std::string why;
  bool too_short = false;
  ErrorKind kind = ErrorKind::InvalidArgument;
};

// Measures and classifies one GPU's trace into `g` and keeps it in its record; or says why not
// (the record then failed).
std::optional<Unmeasured> measure_gpu(const ProbeRequest& r, bool is_command, bool name_device,
                                      const Trace& trace, const GpuInfo& info,
                                      const RunStats& stats, bool stopped_at_limit, RunStore& store,
                                      ProbeReport& g) {
  RunRecord& rec = g.record;
  const std::string run_name =
      fmt::format("run {}{}", rec.id, name_device ? " on " + rec.device : std::string());
  const double ran_s = stats.t_end_s - stats.t_start_s;
  std::optional<Unmeasured> no;
  try {
    RegimeOrWhy named = name_probe_regime(trace, info, measure_options(r));
    if (!named.report) {
      no = Unmeasured{
          fmt::format("{} ({:.2f} s{}): no regime: {}{}", run_name, ran_s,
                      rec.exit_status ? fmt::format(", exit status {}", *rec.exit_status) : "",
                      named.too_short,
                      stopped_at_limit ? "; probe for longer (--seconds)"
                                       : "; the command ended before there was enough to measure"),
          true};
    } else {
      g.report = std::move(named.report);
    }
  } catch (const Error& e) {
    no = Unmeasured{
        fmt::format("{} ({:.1f} s, exit status {}): cannot measure it: {}", run_name, ran_s,
                    rec.exit_status ? std::to_string(*rec.exit_status) : "-", e.what()),
        false, e.kind()};
  }
  if (no) {
    g.failure = no->why;
    rec.status = "failed";
    rec.report = {{"error", g.failure}, {"run", g.run}};
    store.update(rec);
    return no;
  }
  add_warnings(r, is_command, trace, *g.report, g.warnings);
  const nlohmann::json j = to_json(g);
  rec.status = "done";
  rec.regime = to_string(g.report->regime);
  rec.confidence = g.report->confidence;
  rec.measurement = j["measurement"];
  rec.report = j;
  store.update(rec);
  return std::nullopt;
}

// What regime exits with when a GPU named no regime: the command's own failing status, unless
// regime ended it at the time limit (then a run too short says so by 1); a run of one GPU that
// regime cut short and could not measure is an error of its own kind instead (nullopt).
std::optional<int> unmeasured_exit_status(const Unmeasured& u, std::optional<int> exit_status,
                                          bool stopped_at_limit, bool job) {
  const bool own_failure = exit_status && *exit_status != 0;
  if (job) return own_failure && !stopped_at_limit ? *exit_status : 1;
  if (u.too_short) return own_failure ? *exit_status : 1;
  if (own_failure && !stopped_at_limit) return *exit_status;
  return std::nullopt;
}

// One run of the workload over the set's GPUs, each measured and classified on its own trace,
// and a job's figures.
JobProbeReport probe_gpus(const ProbeRequest& r, ProbeGpus set) {
  WorkloadSpec spec = r.workload;
  spec.step_socket = !r.no_steps;
  JobProbeReport out;
  out.is_command = !spec.command.empty();
  // The workload first: a bad regex or an unknown sim workload leaves no run record behind.
  WorkloadPtr work = set.site.targets.front().make_workload(spec);
  // A command on real GPUs: what it uses against what is measured.
  if (!set.site.simulated)
    out.usage = set.job ? job_devices_json(set.site.infos, spec)
                        : one_gpu_devices_json(set.site.infos.front(), spec);
  if (out.usage.is_object())
    for (const auto& w : out.usage.value("warnings", std::vector<std::string>{}))
      out.warnings.push_back(w);

  RunStore store(r.db);
  const std::vector<TracePaths> paths = start_records(r, set, store, out.gpus);
  JobProcessWatch watch(set.site.infos, spec);
  RunStats stats;
  std::vector<Trace> traces;
  try {
    traces = record_run(r, set, *work, watch, paths, stats);
  } catch (const std::exception& e) {
    for (auto& g : out.gpus) {
      g.record.status = "failed";
      g.record.exit_status = work->exit_status();
      g.record.report = {{"error", e.what()}, {"run", nullptr}};
      store.update(g.record);
    }
    throw;
  }
  add_process_findings(watch, out.usage, out.warnings);
  const bool stopped_at_limit = stats.ended_by == RunEnd::Duration;
  const std::optional<int> exit_status = work->exit_status();
  if (work->malformed_markers() > 0)
    out.warnings.push_back(fmt::format("ignored {} malformed step marker(s); last: {}",
                                       work->malformed_markers(), work->last_marker_error()));
  std::vector<Measurement> measured;
  std::vector<Regime> regimes;
  std::optional<Unmeasured> first_unmeasured;
  for (size_t i = 0; i < out.gpus.size(); ++i) {
    ProbeReport& g = out.gpus[i];
    g.is_command = out.is_command;
    g.simulated = set.site.simulated;
    g.record.exit_status = exit_status;
    g.run = run_json(g.record, store.location(), traces[i], stats, g.simulated, stopped_at_limit);
    if (!set.job && !out.usage.is_null()) g.run["job_devices"] = out.usage;
    auto no = measure_gpu(r, out.is_command, set.job, traces[i], set.site.infos[i], stats,
                          stopped_at_limit, store, g);
    if (no && !first_unmeasured) first_unmeasured = no;
    if (no) continue;
    measured.push_back(g.report->measurement);
    regimes.push_back(g.report->regime);
  }
  for (const auto& g : out.gpus)
    for (const auto& w : g.warnings)
      if (std::find(out.warnings.begin(), out.warnings.end(), w) == out.warnings.end())
        out.warnings.push_back(w);
  if (first_unmeasured) {
    auto status = unmeasured_exit_status(*first_unmeasured, exit_status, stopped_at_limit, set.job);
    if (!status) throw Error(first_unmeasured->kind, first_unmeasured->why);
    out.exit_status = *status;
    return out;
  }
  out.job = combine_data_parallel(measured);
  out.job_regime = job_regime(regimes);
  out.spread = gpu_spread(measured);
  // The command's own status, unless regime ended it at the time limit (a probe of a long job
  // is expected to cut it short: that is success).
  out.exit_status = !exit_status || stopped_at_limit ? 0 : *exit_status;
  return out;
}

}  // namespace

ProbeReport run_probe(const ProbeRequest& r) {
  validate(r);
  JobProbeReport set =
      probe_gpus(r, ProbeGpus{open_site(r.device, r.workload, kProbeExample), false});
  ProbeReport out = std::move(set.gpus.front());
  out.warnings = std::move(set.warnings);
  out.exit_status = set.exit_status;
  return out;
}

JobProbeReport run_job_probe(const ProbeRequest& r) {
  validate(r);
  return probe_gpus(r, ProbeGpus{open_site(r.device, r.workload, kProbeExample), true});
}

}  // namespace regime::session
