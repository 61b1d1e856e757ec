// regime probe --device D [--seconds S] ... (--workload sim:NAME | -- CMD ARGS...): one short run,
// measured and classified; the trace, steps and a run record are saved. Never changes a limit.
#include <fmt/core.h>

#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "cli/command.hpp"
#include "cli/open_for_workload.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/shell.hpp"
#include "device/registry.hpp"
#include "run/process_workload.hpp"
#include "run/run_loop.hpp"
#include "run/wall_clock.hpp"
#include "store/run_store.hpp"
#include "trace/csv.hpp"

namespace regime::cli {

namespace {

namespace fs = std::filesystem;

struct ProbeArgs {
  std::string device;
  double seconds = 60;
  double sample_ms = 10;
  double energy_period_s = RunOptions{}.energy_period_s;
  std::optional<double> warmup_s;
  std::optional<std::string> step_regex;
  bool no_steps = false;
  std::string trace_out;
  std::string db;
  bool json = false;
  std::string workload;
  std::vector<std::string> command;
};

struct TracePaths {
  fs::path trace, steps, power;
};

TracePaths trace_paths(const ProbeArgs& a, int64_t run_id) {
  fs::path trace = a.trace_out.empty()
                       ? state_dir() / "runs" / fmt::format("run-{}.trace.csv", run_id)
                       : fs::path(a.trace_out);
  auto steps = sibling_steps_path(trace);
  auto power = sibling_power_path(trace);
  return {trace, steps ? *steps : fs::path(trace.string() + ".steps.csv"),
          power ? *power : fs::path(trace.string() + ".power.csv")};
}

std::string utc_now_iso() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void validate(const ProbeArgs& a) {
  if (a.command.empty() == a.workload.empty())
    throw Error(ErrorKind::InvalidArgument,
                "give either --workload sim:NAME or a command after --, e.g. "
                "regime probe --device nvml:0 -- python3 train.py");
  if (!(a.seconds > 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--seconds must be > 0, got {}", a.seconds));
  if (!(a.sample_ms >= 1 && a.sample_ms <= 10000))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--sample-ms must be in [1, 10000] ms, got {}", a.sample_ms));
  if (!(a.energy_period_s >= 0.1 && a.energy_period_s <= 60))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--energy-period-s must be in [0.1, 60] s, got {}", a.energy_period_s));
  if (a.warmup_s && !(*a.warmup_s >= 0 && *a.warmup_s < a.seconds))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--warmup-s must be in [0, --seconds) = [0, {}), got {}", a.seconds,
                            *a.warmup_s));
}

nlohmann::json options_json(const ProbeArgs& a) {
  nlohmann::json j = {{"seconds", a.seconds},
                      {"sample_ms", a.sample_ms},
                      {"energy_period_s", a.energy_period_s},
                      {"no_steps", a.no_steps},
                      {"warmup_s", a.warmup_s ? nlohmann::json(*a.warmup_s) : nullptr},
                      {"step_regex", a.step_regex ? nlohmann::json(*a.step_regex) : nullptr}};
  return j;
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
          {"sampler_cpu_s", simulated ? nlohmann::json(nullptr) : nlohmann::json(stats.cpu_s)},
          // The process's CPU time (all threads) over the run's wall time: the sampler's own
          // cost, as the workload is another process. Meaningless on a simulated clock.
          {"sampler_cpu_pct", simulated || stats.wall_s <= 0
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(100.0 * stats.cpu_s / stats.wall_s)}};
}

RunRecord new_record(const ProbeArgs& a, const GpuInfo& info, double started_at_s) {
  RunRecord rec;
  rec.started_at_s = started_at_s;
  rec.started_at_utc = utc_now_iso();
  rec.device = a.device;
  rec.gpu_name = info.name;
  rec.gpu_uuid = info.uuid;
  rec.workload = a.command.empty() ? a.workload : command_line(a.command);
  rec.options = options_json(a);
  return rec;
}

MeasureOptions measure_options(const ProbeArgs& a) {
  MeasureOptions mo;
  mo.use_steps = !a.no_steps;
  if (a.warmup_s) {
    mo.detect_steady_state = false;
    mo.warmup_s = *a.warmup_s;
  }
  return mo;
}

// Hints on stderr about how far to trust the figures.
void warn_about(const ProbeArgs& a, bool is_command, const Trace& trace,
                const RegimeReport& report) {
  if (is_command && !a.no_steps && trace.steps.empty())
    std::cerr << "regime: no step markers arrived, so the figures are per second; mark steps "
                 "with python/regime_step (REGIME_STEP_SOCKET) or --step-regex, or pass "
                 "--no-steps\n";
  if (report.evidence.value("short_run", false))
    std::cerr << fmt::format(
        "regime: warning: the steady window is short ({:.1f} s, {} steps; classify wants at "
        "least {} s and {} steps): treat this run's figures as rough\n",
        report.measurement.window_end_s - report.measurement.window_start_s,
        report.measurement.steps, kShortRun_s, kShortRunSteps);
}

void print_text(const RegimeReport& report, const RunRecord& rec, const nlohmann::json& run_info,
                bool is_command, bool simulated) {
  std::cout << format_report(report);
  std::string status;
  if (is_command && rec.exit_status)
    status = fmt::format(
        ", exit status {}{}", *rec.exit_status,
        run_info["stopped_at_time_limit"].get<bool>() ? " (stopped at the time limit)" : "");
  std::cout << fmt::format(
      "run {}: {} on {} ({}), {:.1f} s{}, {} samples, {} step markers{}\n", rec.id, rec.workload,
      rec.device, rec.gpu_name, run_info["duration_s"].get<double>(), simulated ? " simulated" : "",
      run_info["samples"].get<size_t>(), run_info["step_markers"].get<size_t>(), status);
  if (!simulated)
    std::cout << fmt::format("  regime's own CPU: {:.2f}% of one core\n",
                             run_info["sampler_cpu_pct"].get<double>());
  std::cout << fmt::format("  trace {}\n  steps {}\n  saved as run {} in {}\n", rec.trace_path,
                           rec.steps_path, rec.id, run_info["db"].get<std::string>());
}

int probe(const ProbeArgs& a) {
  validate(a);
  GpuPtr gpu = open_for_workload(a.device, !a.command.empty());
  bool simulated = gpu->simulated_clock() != nullptr;
  GpuInfo info = gpu->info();
  WallClock wall;
  // The workload first: a bad regex or an unknown sim workload leaves no run record behind.
  std::unique_ptr<ProcessWorkload> process;
  WorkloadPtr builtin;
  if (!a.command.empty()) {
    ProcessOptions p;
    p.argv = a.command;
    p.step_socket = !a.no_steps;
    p.step_regex = a.step_regex;
    p.stdout_to_stderr = a.json;  // stdout carries only the JSON
    process = std::make_unique<ProcessWorkload>(p, wall);
  } else {
    builtin = make_builtin_workload(a.workload, *gpu);
  }
  Workload& work = process ? static_cast<Workload&>(*process) : *builtin;

  fs::path db_path = a.db.empty() ? RunStore::default_path() : fs::path(a.db);
  RunStore store(db_path);
  RunRecord rec = new_record(a, info, wall.now_s());
  rec.id = store.insert(rec);  // recorded as running: a crash still leaves the trace findable
  TracePaths paths = trace_paths(a, rec.id);
  rec.trace_path = fs::absolute(paths.trace).string();
  rec.steps_path = fs::absolute(paths.steps).string();
  auto fail = [&](const std::string& why, const nlohmann::json& run_info) {
    rec.status = "failed";
    rec.exit_status = work.exit_status();
    rec.report = {{"error", why}, {"run", run_info}};
    store.update(rec);
  };

  RunStats stats;
  Trace trace;
  try {
    store.update(rec);
    if (paths.trace.has_parent_path()) fs::create_directories(paths.trace.parent_path());
    TraceCsvWriter trace_writer(paths.trace);
    StepsCsvWriter steps_writer(paths.steps);
    RunOptions o;
    o.duration_s = a.seconds;
    o.sample_period_s = a.sample_ms / 1000.0;
    o.energy_period_s = a.energy_period_s;
    o.on_sample = [&](const Sample& s) { trace_writer.append(s); };
    o.on_step = [&](const Step& s) { steps_writer.append(s); };
    trace = run(*gpu, work, o, clock_for(*gpu, wall), &stats);
    trace_writer.close();
    steps_writer.close();
    if (!trace.power_points.empty()) write_power_csv(paths.power, trace.power_points);
  } catch (const std::exception& e) {
    fail(e.what(), nullptr);
    throw;
  }
  rec.exit_status = work.exit_status();
  bool stopped_at_limit = stats.ended_by == RunEnd::Duration;
  if (process && process->malformed_markers() > 0)
    std::cerr << fmt::format("regime: ignored {} malformed step marker(s); last: {}\n",
                             process->malformed_markers(), process->last_marker_error());
  nlohmann::json run_info = run_json(rec, db_path, trace, stats, simulated, stopped_at_limit);

  RegimeReport report;
  try {
    report = classify(measure(trace, measure_options(a)), info);
  } catch (const Error& e) {
    fail(e.what(), run_info);
    std::string what =
        fmt::format("run {} ({:.1f} s, exit status {}): cannot measure it: {}", rec.id,
                    stats.t_end_s - stats.t_start_s,
                    rec.exit_status ? std::to_string(*rec.exit_status) : "-", e.what());
    // A command that failed by itself: say why nothing was measured, and pass its status on.
    if (rec.exit_status && *rec.exit_status != 0 && !stopped_at_limit) {
      std::cerr << "regime: " << what << "\n";
      return *rec.exit_status;
    }
    throw Error(e.kind(), what);
  }
  warn_about(a, process != nullptr, trace, report);
  nlohmann::json out = to_json(report);
  for (auto& [k, v] : run_info.items()) out[k] = v;
  rec.status = "done";
  rec.regime = to_string(report.regime);
  rec.confidence = report.confidence;
  rec.measurement = out["measurement"];
  rec.report = out;
  store.update(rec);

  if (a.json) {
    print_json(out);
  } else {
    print_text(report, rec, run_info, process != nullptr, simulated);
  }
  // The command's own status, unless regime ended it at the time limit (a probe of a long job
  // is expected to cut it short: that is success).
  if (!rec.exit_status || stopped_at_limit) return 0;
  return *rec.exit_status;
}

const CommandRegistrar reg("probe", [](CLI::App& root, Context& ctx) {
  auto a = std::make_shared<ProbeArgs>();
  auto* sub = root.add_subcommand(
      "probe",
      "Run a workload briefly while sampling the GPU; measure time and energy per step and name "
      "the regime. Never changes a power limit.");
  sub->add_option("--device", a->device, "Device URI: nvml:N or sim:MODEL")->required();
  sub->add_option("--seconds", a->seconds,
                  "Run length in seconds (simulated seconds on sim: devices); a command still "
                  "running then is stopped (SIGTERM, SIGKILL after 10 s)")
      ->capture_default_str();
  sub->add_option("--sample-ms", a->sample_ms, "Sampling period of the cheap fields, ms")
      ->capture_default_str();
  sub->add_option("--energy-period-s", a->energy_period_s,
                  "Seconds between reads of the energy counter (also read at every window "
                  "edge); each read costs milliseconds on some GPUs")
      ->capture_default_str();
  sub->add_option("--warmup-s", a->warmup_s,
                  "Drop this many seconds as warm-up instead of detecting the steady state");
  auto* regex = sub->add_option("--step-regex", a->step_regex,
                                "Each line of the command's output matching this (ECMAScript) "
                                "regex ends a step");
  auto* no_steps = sub->add_flag("--no-steps", a->no_steps,
                                 "No step markers: time windows only, figures per second");
  regex->excludes(no_steps);
  sub->add_option("--trace-out", a->trace_out,
                  "Trace CSV to write (default: STATE_DIR/runs/run-ID.trace.csv); steps go to "
                  "the sibling .steps.csv");
  sub->add_option("--db", a->db, "Run database (default: STATE_DIR/runs.sqlite)");
  sub->add_flag("--json", a->json,
                "Machine-readable output: stdout carries only the JSON object; the command's own "
                "stdout goes to stderr");
  auto* workload =
      sub->add_option("--workload", a->workload, "Built-in workload, e.g. sim:resnet50");
  auto* command = sub->add_option("command", a->command, "The command to run and watch (after --)");
  workload->excludes(command);
  sub->callback([a, &ctx] { ctx.exit_status = probe(*a); });
});

}  // namespace
}  // namespace regime::cli
