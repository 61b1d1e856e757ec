#include "session/probe.hpp"

#include <fmt/core.h>

#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/utc_time.hpp"
#include "session/job_devices.hpp"
#include "trace/csv.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

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
  session::validate(r.workload, "regime probe --device nvml:0 -- python3 train.py");
  if (!(r.seconds > 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--seconds must be > 0, got {}", r.seconds));
  if (!(r.sample_ms >= 1 && r.sample_ms <= 10000))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--sample-ms must be in [1, 10000] ms, got {}", r.sample_ms));
  if (!(r.energy_period_s >= 0.1 && r.energy_period_s <= 60))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--energy-period-s must be in [0.1, 60] s, got {}", r.energy_period_s));
  if (r.warmup_s && !(*r.warmup_s >= 0 && *r.warmup_s < r.seconds))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--warmup-s must be in [0, --seconds) = [0, {}), got {}", r.seconds,
                            *r.warmup_s));
}

nlohmann::json options_json(const ProbeRequest& r) {
  return {{"seconds", r.seconds},
          {"sample_ms", r.sample_ms},
          {"energy_period_s", r.energy_period_s},
          {"no_steps", r.no_steps},
          {"warmup_s", r.warmup_s ? nlohmann::json(*r.warmup_s) : nullptr},
          {"step_regex", r.workload.step_regex ? nlohmann::json(*r.workload.step_regex) : nullptr}};
}

// What the run itself adds to the report: where things went and what it cost.
nlohmann::json run_json(const RunRecord& rec, const fs::path& db_path, const Trace& trace,
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
          {"db", fs::absolute(db_path).string()},
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

RunRecord new_record(const ProbeRequest& r, const GpuInfo& info, double started_at_s) {
  RunRecord rec;
  rec.started_at_s = started_at_s;
  rec.started_at_utc = utc_now_iso();
  rec.device = r.device;
  rec.gpu_name = info.name;
  rec.gpu_uuid = info.uuid;
  rec.workload = r.workload.display_name();
  rec.options = options_json(r);
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

}  // namespace

ProbeReport run_probe(const ProbeRequest& r) {
  validate(r);
  WorkloadSpec spec = r.workload;
  spec.step_socket = !r.no_steps;
  Target target = open_target(r.device);
  ProbeReport out;
  out.simulated = target.simulated();
  out.is_command = !spec.command.empty();
  GpuInfo info = target.gpu().info();
  // The workload first: a bad regex or an unknown sim workload leaves no run record behind.
  WorkloadPtr work = target.make_workload(spec);

  fs::path db_path = RunStore::path_or_default(r.db);
  RunStore store(db_path);
  RunRecord& rec = out.record;
  rec = new_record(r, info, target.wall().unix_now_s());
  rec.id = store.insert(rec);  // recorded as running: a crash still leaves the trace findable
  TracePaths paths = trace_paths(r, rec.id);
  rec.trace_path = fs::absolute(paths.trace).string();
  rec.steps_path = fs::absolute(paths.steps).string();
  auto fail = [&](const std::string& why, const nlohmann::json& run_info) {
    rec.status = "failed";
    rec.exit_status = work->exit_status();
    rec.report = {{"error", why}, {"run", run_info}};
    store.update(rec);
  };

  // A command on a real GPU: what it uses against what is measured.
  nlohmann::json usage = target.simulated() ? nlohmann::json() : one_gpu_devices_json(info, spec);
  JobProcessWatch watch({info}, spec);
  RunStats stats;
  Trace trace;
  try {
    store.update(rec);
    if (paths.trace.has_parent_path()) fs::create_directories(paths.trace.parent_path());
    TraceCsvWriter trace_writer(paths.trace);
    StepsCsvWriter steps_writer(paths.steps);
    RunOptions o;
    o.duration_s = r.seconds;
    o.sample_period_s = r.sample_ms / 1000.0;
    o.energy_period_s = r.energy_period_s;
    ProbeProgress progress;
    progress.total_s = r.seconds;
    std::optional<double> first_t_s;
    o.on_sample = [&](const Sample& s) {
      trace_writer.append(s);
      watch.maybe_check(*work, s.t_s);
      if (!r.on_progress) return;
      if (!first_t_s) first_t_s = s.t_s;
      progress.elapsed_s = s.t_s - *first_t_s;
      progress.power_W = s.power_W ? s.power_W : s.power_avg_W;
      progress.temp_C = s.temp_C;
      r.on_progress(progress);
    };
    o.on_step = [&](const Step& s) {
      steps_writer.append(s);
      ++progress.steps;
    };
    trace = run(target.gpu(), *work, o, target.clock(), &stats);
    trace_writer.close();
    steps_writer.close();
    if (!trace.power_points.empty()) write_power_csv(paths.power, trace.power_points);
  } catch (const std::exception& e) {
    fail(e.what(), nullptr);
    throw;
  }
  if (usage.is_object())
    for (const auto& w : usage.value("warnings", std::vector<std::string>{}))
      out.warnings.push_back(w);
  add_process_findings(watch, usage, out.warnings);
  rec.exit_status = work->exit_status();
  bool stopped_at_limit = stats.ended_by == RunEnd::Duration;
  if (work->malformed_markers() > 0)
    out.warnings.push_back(fmt::format("ignored {} malformed step marker(s); last: {}",
                                       work->malformed_markers(), work->last_marker_error()));
  out.run = run_json(rec, db_path, trace, stats, out.simulated, stopped_at_limit);
  if (!usage.is_null()) out.run["job_devices"] = usage;

  RegimeReport report;
  try {
    const Measurement m = measure(trace, measure_options(r));
    // Too little to measure: no regime at all, rather than a guess from a few samples.
    if (const std::string why = too_short_to_classify(m); !why.empty()) {
      const bool ended_itself = !stopped_at_limit;
      std::string what = fmt::format(
          "run {} ({:.2f} s{}): no regime: {}{}", rec.id, stats.t_end_s - stats.t_start_s,
          rec.exit_status ? fmt::format(", exit status {}", *rec.exit_status) : std::string(), why,
          ended_itself ? "; the command ended before there was enough to measure"
                       : "; probe for longer (--seconds)");
      fail(what, out.run);
      out.failure = what;
      out.exit_status = rec.exit_status && *rec.exit_status != 0 ? *rec.exit_status : 1;
      return out;
    }
    report = classify(m, info);
  } catch (const Error& e) {
    fail(e.what(), out.run);
    std::string what =
        fmt::format("run {} ({:.1f} s, exit status {}): cannot measure it: {}", rec.id,
                    stats.t_end_s - stats.t_start_s,
                    rec.exit_status ? std::to_string(*rec.exit_status) : "-", e.what());
    // A command that failed by itself: say why nothing was measured, and pass its status on.
    if (rec.exit_status && *rec.exit_status != 0 && !stopped_at_limit) {
      out.failure = what;
      out.exit_status = *rec.exit_status;
      return out;
    }
    throw Error(e.kind(), what);
  }
  add_warnings(r, out.is_command, trace, report, out.warnings);
  out.report = report;
  nlohmann::json j = to_json(out);
  rec.status = "done";
  rec.regime = to_string(report.regime);
  rec.confidence = report.confidence;
  rec.measurement = j["measurement"];
  rec.report = j;
  store.update(rec);
  // The command's own status, unless regime ended it at the time limit (a probe of a long job
  // is expected to cut it short: that is success).
  out.exit_status = !rec.exit_status || stopped_at_limit ? 0 : *rec.exit_status;
  return out;
}

nlohmann::json to_json(const ProbeReport& p) {
  nlohmann::json out = p.report ? regime::to_json(*p.report) : nlohmann::json::object();
  for (auto& [k, v] : p.run.items()) out[k] = v;
  return out;
}

}  // namespace regime::session

namespace regime::session {

namespace {

// "out.trace.csv" -> "out-gpu1.trace.csv": one trace per GPU beside the name given.
std::string per_gpu_trace_out(const std::string& given, const GpuInfo& info) {
  if (given.empty()) return given;
  const std::string tag = fmt::format("-gpu{}", info.index);
  const std::string ext = ".trace.csv";
  if (given.size() > ext.size() && given.compare(given.size() - ext.size(), ext.size(), ext) == 0)
    return given.substr(0, given.size() - ext.size()) + tag + ext;
  return given + tag;
}

}  // namespace

JobProbeReport run_job_probe(const ProbeRequest& r) {
  validate(r);
  WorkloadSpec spec = r.workload;
  spec.step_socket = !r.no_steps;
  std::vector<Target> targets = open_targets(resolve_job_device(r.device, spec));
  std::vector<Gpu*> gpus = job_gpus(targets);
  JobProbeReport out;
  out.is_command = !spec.command.empty();
  std::vector<GpuInfo> infos;
  for (Gpu* g : gpus) infos.push_back(g->info());
  WorkloadPtr work = targets.front().make_workload(spec);
  out.usage = job_devices_json(infos, spec);
  for (const auto& w : out.usage.value("warnings", std::vector<std::string>{}))
    out.warnings.push_back(w);

  fs::path db_path = RunStore::path_or_default(r.db);
  RunStore store(db_path);
  const size_t n = targets.size();
  std::vector<TracePaths> paths;
  out.gpus.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ProbeRequest ri = r;
    ri.device = targets[i].uri();
    ri.trace_out = per_gpu_trace_out(r.trace_out, infos[i]);
    RunRecord& rec = out.gpus[i].record;
    rec = new_record(ri, infos[i], targets[i].wall().unix_now_s());
    rec.options["job_devices"] = r.device;
    rec.id = store.insert(rec);
    paths.push_back(trace_paths(ri, rec.id));
    rec.trace_path = fs::absolute(paths[i].trace).string();
    rec.steps_path = fs::absolute(paths[i].steps).string();
    out.gpus[i].is_command = out.is_command;
  }
  auto fail_all = [&](const std::string& why) {
    for (auto& g : out.gpus) {
      g.record.status = "failed";
      g.record.exit_status = work->exit_status();
      g.record.report = {{"error", why}};
      store.update(g.record);
    }
  };

  JobProcessWatch watch(infos, spec);
  RunStats stats;
  std::vector<Trace> traces;
  try {
    std::vector<std::unique_ptr<TraceCsvWriter>> writers;
    std::vector<std::unique_ptr<StepsCsvWriter>> step_writers;
    for (size_t i = 0; i < n; ++i) {
      store.update(out.gpus[i].record);
      if (paths[i].trace.has_parent_path()) fs::create_directories(paths[i].trace.parent_path());
      writers.push_back(std::make_unique<TraceCsvWriter>(paths[i].trace));
      step_writers.push_back(std::make_unique<StepsCsvWriter>(paths[i].steps));
    }
    RunOptions o;
    o.duration_s = r.seconds;
    o.sample_period_s = r.sample_ms / 1000.0;
    o.energy_period_s = r.energy_period_s;
    // The loop hands over each tick's samples in the order of the GPUs.
    size_t next_lane = 0;
    ProbeProgress progress;
    progress.total_s = r.seconds;
    std::optional<double> first_t_s;
    o.on_sample = [&](const Sample& s) {
      writers[next_lane]->append(s);
      next_lane = (next_lane + 1) % n;
      if (next_lane == 0) watch.maybe_check(*work, s.t_s);
      if (!r.on_progress || next_lane != 0) return;
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
    traces = run(gpus, *work, o, targets.front().clock(), &stats);
    for (size_t i = 0; i < n; ++i) {
      writers[i]->close();
      step_writers[i]->close();
      if (!traces[i].power_points.empty()) write_power_csv(paths[i].power, traces[i].power_points);
    }
  } catch (const std::exception& e) {
    fail_all(e.what());
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
  for (size_t i = 0; i < n; ++i) {
    ProbeReport& g = out.gpus[i];
    RunRecord& rec = g.record;
    rec.exit_status = exit_status;
    g.run = run_json(rec, db_path, traces[i], stats, false, stopped_at_limit);
    try {
      const Measurement m = measure(traces[i], measure_options(r));
      if (const std::string why = too_short_to_classify(m); !why.empty())
        throw Error(ErrorKind::InvalidArgument, "no regime: " + why);
      RegimeReport report = classify(m, infos[i]);
      add_warnings(r, out.is_command, traces[i], report, g.warnings);
      g.report = report;
      nlohmann::json j = to_json(g);
      rec.status = "done";
      rec.regime = to_string(report.regime);
      rec.confidence = report.confidence;
      rec.measurement = j["measurement"];
      rec.report = j;
      store.update(rec);
      measured.push_back(m);
      regimes.push_back(report.regime);
    } catch (const Error& e) {
      g.failure = fmt::format("run {} on {}: cannot measure it: {}", rec.id, rec.device, e.what());
      rec.status = "failed";
      rec.report = {{"error", g.failure}, {"run", g.run}};
      store.update(rec);
    }
  }
  for (const auto& g : out.gpus)
    for (const auto& w : g.warnings)
      if (std::find(out.warnings.begin(), out.warnings.end(), w) == out.warnings.end())
        out.warnings.push_back(w);
  if (measured.size() == n) {
    out.job = combine_data_parallel(measured);
    out.job_regime = job_regime(regimes);
    out.spread = gpu_spread(measured);
    out.exit_status = !exit_status || stopped_at_limit ? 0 : *exit_status;
  } else {
    out.exit_status = exit_status && *exit_status != 0 && !stopped_at_limit ? *exit_status : 1;
  }
  return out;
}

nlohmann::json to_json(const JobProbeReport& p) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : p.gpus) {
    nlohmann::json j = to_json(g);
    if (!g.failure.empty()) j["failure"] = g.failure;
    gpus.push_back(j);
  }
  nlohmann::json job = nullptr;
  if (p.job) {
    job = {{"gpus", p.gpus.size()},
           {"regime", to_string(*p.job_regime)},
           {"measurement", regime::to_json(*p.job)},
           {"spread", regime::to_json(*p.spread)}};
  }
  return {{"job", job}, {"gpus", gpus}, {"usage", p.usage}, {"warnings", p.warnings}};
}

}  // namespace regime::session
