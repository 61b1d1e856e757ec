#include "session/study.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "analysis/data_parallel.hpp"
#include "analysis/measure.hpp"
#include "analysis/steady_state.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/utc_time.hpp"
#include "common/version.hpp"
#include "plan/render.hpp"
#include "run/run_loop.hpp"
#include "store/run_store.hpp"
#include "trace/csv.hpp"
#include "twin/spec.hpp"
#include "twin/uncertainty.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

// "sim:t4,ambient_C=35" -> "sim_t4_ambient_C_35": one output folder per device of a list.
std::string device_dir_name(const std::string& device) {
  std::string out;
  for (char c : device) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// The run store of one command, opened where it first keeps something.
class CommandStore {
 public:
  explicit CommandStore(std::string db) : db_(std::move(db)) {}
  RunStore& get() {
    if (!store_) store_.emplace(RunStore::path_or_default(db_));
    return *store_;
  }

 private:
  std::string db_;
  std::optional<RunStore> store_;
};

// The study in the run database, beside its sweep (if one ran) and the sweep's decision.
void keep_study(StudyReport& rep, const StudyRequest& r, RunStore& store) {
  StudyRecord rec;
  rec.started_at_utc = utc_now_iso();
  rec.device = rep.device;
  const bool job = !rep.job_devices.empty();
  rec.gpu_name = job ? fmt::format("{}x {}", rep.job_devices.size(), rep.info.name) : rep.info.name;
  rec.gpu_uuid = job ? "" : rep.info.uuid;
  rec.workload = rep.workload;
  rec.regime = to_string(rep.regime.regime);
  if (rep.sweep) {
    rec.sweep_id = rep.sweep->stored_id;
    rec.decision = plan::decision_json(rep.sweep->outcome.decision, decision_view(*rep.sweep));
  }
  rec.report = rep.json;
  rec.provenance.driver_version = rep.info.driver_version;
  rec.provenance.options = settings_json(r.settings, "plan");
  rec.provenance.options["probe_seconds"] = r.probe_seconds;
  rec.provenance.options["max_probe_seconds"] = r.max_probe_seconds;
  rec.provenance.options["actuate"] = r.actuate;
  rep.study_id = store.insert_study(rec);
}

void validate(const StudyRequest& r) {
  session::validate(r.workload, "regime study --device nvml:0 -- python3 train.py");
  if (!(r.probe_seconds >= 1 && r.probe_seconds <= 3600))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--probe-seconds must be in [1, 3600] s, got {}", r.probe_seconds));
}

// Temperature flat: the heating has run its course (the probers' settle tolerance).
constexpr double kStudyFlatTemp_C_per_min = 0.5;
constexpr double kStudySlopeWindow_s = 20;

// One run at the current limit, measured on each GPU; nothing is changed. A card still heating
// after probe_seconds is watched on until its temperature is flat (or max_probe_seconds), and the
// last probe_seconds are classified. With an output folder the trace goes to DIR/probe.trace.csv
// and its siblings.
std::vector<Measurement> probe_pair(const StudyRequest& r, std::vector<Target>& targets,
                                    const std::vector<Gpu*>& gpus, StudyReport& rep) {
  WorkloadPtr work = targets.front().make_workload(r.workload);
  RunOptions o;
  o.duration_s = 0;  // until the heating is over or the workload ends
  RunLoop loop(gpus, *work, o, targets.front().clock());
  loop.start();
  const double t0 = loop.now_s();
  RunEnd end =
      loop.run_until([&](const Trace&, double now) { return now >= t0 + r.probe_seconds; });
  const double most_s = std::max(r.probe_seconds, r.max_probe_seconds);
  TrailingSlopes slopes;  // of the GPU heating fastest
  while (true) {
    const double now = loop.now_s();
    rep.still_heating = false;
    for (size_t i = 0; i < gpus.size(); ++i) {
      const Trace& t = loop.trace(i);
      TrailingSlopes s = trailing_slopes(t, now - kStudySlopeWindow_s, now,
                                         t.samples.empty() ? 0 : t.samples.front().gpu);
      const bool heating = !slopes_flat(s, kStudyFlatTemp_C_per_min, 1e9);
      if (i == 0 || (heating && !rep.still_heating)) slopes = s;
      rep.still_heating = rep.still_heating || heating;
    }
    if (!rep.still_heating || end != RunEnd::StopRequested || now >= t0 + most_s) break;
    end = loop.run_until([&](const Trace&, double t) { return t >= now + 5; });
  }
  RunStats stats;
  std::vector<Trace> traces = loop.finish_all(&stats);
  Trace& trace = rep.probe_trace;
  trace = traces.front();
  rep.probe_ran_s = stats.t_end_s - stats.t_start_s;
  rep.end_temp_slope_C_per_min = slopes.temp_C ? slopes.temp_C->per_min : 0;
  if (!r.out_dir.empty()) {
    fs::path dir(r.out_dir);
    for (size_t i = 0; i < traces.size(); ++i) {
      const std::string tag = traces.size() > 1 ? fmt::format("-gpu{}", i) : "";
      write_trace_csv(dir / ("probe" + tag + ".trace.csv"), traces[i].samples);
      write_steps_csv(dir / ("probe" + tag + ".steps.csv"), traces[i].steps);
      if (!traces[i].power_points.empty())
        write_power_csv(dir / ("probe" + tag + ".power.csv"), traces[i].power_points);
    }
  }
  auto status = work->exit_status();
  if (status && *status != 0 && end == RunEnd::WorkloadFinished)
    throw WorkloadFailed(
        fmt::format("the workload exited with status {} during the probe", *status), status);
  if (!r.workload.command.empty() && trace.steps.empty())
    rep.warnings.push_back(
        "no step markers arrived during the probe, so the figures are per second; mark steps "
        "with python/regime_step or --step-regex");
  if (rep.probe_ran_s > r.probe_seconds + 1)
    rep.warnings.push_back(fmt::format(
        "the card was still heating after {:g} s: the probe ran {:.0f} s until its temperature "
        "was flat{}, and its last {:g} s are classified",
        r.probe_seconds, rep.probe_ran_s, rep.still_heating ? " (it never was)" : "",
        r.probe_seconds));
  if (rep.still_heating)
    rep.warnings.push_back(fmt::format(
        "the temperature was still rising {:.1f} C/min when the probe ended: the regime may still "
        "change as the card heats (a card that reaches its slowdown temperature turns "
        "thermal-bound); probe longer with --probe-seconds",
        rep.end_temp_slope_C_per_min));
  MeasureOptions mo;
  std::vector<Measurement> per_gpu;
  for (size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    const double end_s = t.samples.empty() ? 0 : t.samples.back().t_s;
    const Measurement m = rep.probe_ran_s > r.probe_seconds + 1
                              ? measure_window(t, end_s - r.probe_seconds, end_s, mo)
                              : measure(t, mo);
    if (const std::string why = too_short_to_classify(m); !why.empty())
      throw WorkloadFailed(
          fmt::format("the probe cannot name a regime{}: {}{}",
                      traces.size() > 1 ? " on " + targets[i].uri() : std::string(), why,
                      end == RunEnd::WorkloadFinished
                          ? "; the workload ended before there was enough to measure"
                          : ""),
          status);
    per_gpu.push_back(m);
  }
  return per_gpu;
}

// Long enough for the gated controller's probe, a lead-in and the default windows, each of twice
// the settling time (ControlRequest::windows): 60 + 8 * 6 time constants.
double auto_control_seconds(const GpuInfo& info) {
  double tau_s = 30;
  try {
    tau_s = twin::load_gpu_spec(info.name).thermal_time_constant_s;
  } catch (const Error&) {
  }
  const int windows = ControlRequest{}.windows;
  return 60 + (windows + 1) * 6 * tau_s;
}

std::string control_command(const StudyRequest& r, double seconds) {
  std::string cmd =
      fmt::format("regime control --device {} --policy regime-gated --evaluate --seconds {:g}",
                  r.device.text, seconds);
  if (!r.workload.builtin.empty()) return cmd + " --workload " + r.workload.builtin;
  if (r.workload.step_regex) cmd += " --step-regex '" + *r.workload.step_regex + "'";
  cmd += " --actuate --";
  for (const auto& a : r.workload.command) cmd += " " + a;
  return cmd;
}

// The gate decides from the study's own probe; only a pair it would let in is evaluated, by the
// gated controller itself (which probes again, on its own run).
void study_control(const StudyRequest& r, bool physical, StudyReport& rep,
                   const ActuationPolicy& policy) {
  StudyControl& c = rep.control;
  c.reason = gate_reason(rep.regime, rep.info);
  const double seconds = r.control_seconds > 0 ? r.control_seconds : auto_control_seconds(rep.info);
  c.command = control_command(r, seconds);
  if (!c.reason.empty()) return;
  if (!r.control) {
    c.skipped = "--no-control was given. To evaluate the controller, run: " + c.command;
  } else if (r.settings.apply) {
    // The evaluation's baseline is the limit it finds: with --apply that would be the chosen cap.
    c.skipped =
        "--apply leaves the chosen cap set, and the evaluation compares against the "
        "original limit. To evaluate, run `regime restore`, then: " +
        c.command;
  } else if (policy.read_only) {
    c.skipped =
        "REGIME_READ_ONLY is set: the evaluation changes the limit. To evaluate, unset it "
        "and run: " +
        c.command;
  } else if (physical && !r.actuate) {
    c.skipped =
        "the evaluation changes the power limit of this real GPU, and --actuate was not "
        "given. To evaluate, run: " +
        c.command;
  }
  if (!c.skipped.empty()) {
    c.reason = "thermal-bound: the gated controller would engage";
    return;
  }
  ControlRequest cr;
  cr.device = r.device.text;
  cr.workload = r.workload;
  cr.policy = "regime-gated";
  cr.seconds = seconds;
  cr.evaluate = true;
  cr.actuate = r.actuate;
  cr.db = r.settings.db;
  c.run = run_control(cr);
  c.engaged = c.run->engaged;
  c.reason = c.run->reason;
}

}  // namespace

ProbeVerdict classify_probe(const std::vector<Measurement>& per_gpu,
                            const std::vector<GpuInfo>& infos) {
  ProbeVerdict v;
  std::vector<Regime> names;
  for (size_t i = 0; i < per_gpu.size(); ++i) {
    v.gpus.push_back(classify(per_gpu[i], infos.at(i)));
    names.push_back(v.gpus.back().regime);
  }
  const Regime job = job_regime(names);
  while (v.gpus[v.gpu].regime != job) ++v.gpu;
  v.regime = v.gpus[v.gpu];
  v.job = combine_data_parallel(per_gpu);
  return v;
}

plan::SweepPlan plan_study_sweep(const ProbeVerdict& v, const std::vector<GpuInfo>& infos) {
  return plan::plan_sweep(v.regime, infos.at(v.gpu));
}

namespace {

StudyReport study_one(const StudyRequest& r, CommandStore& store) {
  validate(r);
  const DeviceSet devices = resolve_job_devices(r.device, r.workload);
  std::vector<Target> targets = open_targets(devices);
  // A command on a simulated device is refused before anything runs.
  for (const Target& t : targets) t.check_can_run(r.workload);
  std::vector<Gpu*> gpus =
      targets.size() == 1 ? std::vector<Gpu*>{&targets.front().gpu()} : job_gpus(targets);
  const bool physical = gpus.front()->is_physical();
  if (r.settings.apply && physical && !r.actuate)
    throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");
  if (!r.out_dir.empty()) fs::create_directories(r.out_dir);

  StudyReport rep;
  rep.device = r.device.text;
  rep.workload = r.workload.display_name();
  rep.probe_seconds = r.probe_seconds;
  rep.info = gpus.front()->info();
  if (devices.simulated()) rep.sim_model = devices.devices.front().target;
  if (targets.size() > 1)
    for (const Target& t : targets) rep.job_devices.push_back(t.uri());
  std::vector<GpuInfo> infos;
  for (Gpu* g : gpus) infos.push_back(g->info());
  const ProbeVerdict verdict = classify_probe(probe_pair(r, targets, gpus, rep), infos);
  rep.regime = verdict.regime;
  if (targets.size() > 1) {
    rep.gpu_regimes = verdict.gpus;
    rep.job_measurement = verdict.job;
  }
  rep.plan = plan_study_sweep(verdict, infos);
  rep.sweep_command = plan::sweep_command(
      {r.device.text, r.workload.builtin, r.workload.command, r.workload.step_regex.value_or(""),
       plan::to_string(r.settings.strategy), r.settings.objective.text()},
      rep.plan.caps);

  ActuationPolicy policy = ActuationPolicy::from_flags(r.actuate);
  if (!rep.plan.sweep) {
    rep.skipped = rep.plan.why;
  } else if (rep.regime.measurement.per_second && !r.settings.budget.accept_per_second) {
    rep.skipped = no_step_markers_message(
        rep.workload, rep.regime.measurement.window_end_s - rep.regime.measurement.window_start_s);
  } else if (policy.read_only) {
    rep.skipped = "REGIME_READ_ONLY is set: nothing is changed. To sweep, unset it and run: " +
                  rep.sweep_command;
  } else if (physical && !r.actuate) {
    rep.skipped =
        "a sweep changes the power limit of this real GPU, and --actuate was not given: "
        "nothing was changed. To sweep, run: " +
        rep.sweep_command;
  }
  if (rep.skipped.empty()) {
    rep.sweep = sweep_targets(targets, r.workload, rep.plan.caps, r.settings, policy);
    keep_sweep(*rep.sweep, "study", to_json(*rep.sweep), store.get(),
               settings_json(r.settings, "plan"));
  }
  study_control(r, physical, rep, policy);
  rep.json = to_json(rep);
  if (!r.out_dir.empty())
    write_file_atomic(fs::path(r.out_dir) / "study.json", rep.json.dump(2) + "\n");
  keep_study(rep, r, store.get());
  return rep;
}

}  // namespace

StudyReport run_study(const StudyRequest& r) {
  CommandStore store(r.settings.db);
  return study_one(r, store);
}

bool study_is_one_job(const DeviceSet& devices) {
  if (!runs_as_job(devices)) return false;
  for (const DeviceUri& d : devices.devices)
    if (d.scheme != "nvml") return false;
  return true;
}

bool studied_in_turn(const DeviceSet& devices) {
  return devices.devices.size() > 1 && !study_is_one_job(devices);
}

std::vector<StudyReport> run_studies(const StudyRequest& r) {
  CommandStore store(r.settings.db);
  if (study_is_one_job(r.device)) return {study_one(r, store)};
  std::vector<StudyReport> out;
  for (const DeviceUri& device : r.device.devices) {
    StudyRequest one = r;
    one.device = one_device(device);
    if (!r.out_dir.empty())
      one.out_dir = (fs::path(r.out_dir) / device_dir_name(device.text)).string();
    out.push_back(study_one(one, store));
  }
  return out;
}

StudyRow study_row(const StudyReport& rep) {
  StudyRow row;
  row.device = rep.device;
  row.gpu = rep.info.name;
  row.regime = to_string(rep.regime.regime);
  row.default_limit_W = rep.info.default_limit_W;
  row.controller_may_help = rep.plan.controller_may_help;
  std::optional<double> decided_W;
  if (rep.sweep) {
    // Against the default's level the decision used, as every view of it shows.
    const plan::DecisionView view = decision_view(*rep.sweep);
    for (const auto& p : plan::by_cap_desc(rep.sweep->outcome.probes))
      if (auto c = plan::change_vs_default(view, p))
        row.energy_vs_default_pct.push_back({p.cap_W, c->energy_pct});
    const plan::Decision& d = rep.sweep->outcome.decision;
    row.decision = d.keep_default ? "keep default" : fmt::format("{:g} W", d.cap_W);
    decided_W = d.keep_default ? rep.info.default_limit_W : d.cap_W;
  } else {
    row.decision = "no sweep";
  }
  if (rep.control.run && rep.control.run->evaluation) {
    const Evaluation& e = *rep.control.run->evaluation;
    row.controller_effect_pct = e.energy_change_pct;
    row.controller_effect_ci_pct = e.energy_change_ci_pct;
    row.controller_verdict = to_string(e.verdict);
  } else {
    // Kept out by the regime gate, or skipped (read-only, no --actuate, --apply).
    row.controller_verdict = rep.control.skipped.empty() ? "gated out" : "skipped";
  }
  if (rep.sim_model.empty()) {
    row.basis = "measured";
  } else {
    const twin::GpuSpec spec = twin::load_gpu_spec(rep.sim_model);
    const twin::Uncertainty u =
        twin::spec_uncertainty(spec, decided_W.value_or(rep.info.default_limit_W));
    row.basis = u.calibrated && !u.extrapolated ? "calibrated" : "predicted";
  }
  return row;
}

std::string format_study_table(const std::vector<StudyRow>& rows) {
  size_t caps_width = 36;
  for (const StudyRow& r : rows) {
    size_t w = 0;
    for (const auto& [cap, pct] : r.energy_vs_default_pct)
      w += fmt::format(", {:g}: {:+.1f}", cap, pct).size();
    caps_width = std::max(caps_width, w);
  }
  std::string out = fmt::format("{:<10} {:<14} {:<10} {:>9}  {:<{}} {:<13} {:<11} {}\n", "device",
                                "gpu", "regime", "default W", "energy/step vs default (W: dE %)",
                                caps_width, "decision", "basis", "controller (effect)");
  for (const StudyRow& r : rows) {
    std::string caps;
    for (const auto& [cap, pct] : r.energy_vs_default_pct)
      caps += fmt::format("{}{:g}: {:+.1f}", caps.empty() ? "" : ", ", cap, pct);
    if (caps.empty()) caps = "-";
    std::string controller = r.controller_may_help ? "may help" : "cannot help";
    controller += r.controller_effect_pct
                      ? fmt::format(": dE {:+.1f}% [{:+.1f}, {:+.1f}], {}",
                                    *r.controller_effect_pct, r.controller_effect_ci_pct.first,
                                    r.controller_effect_ci_pct.second, r.controller_verdict)
                      : fmt::format(" ({})", r.controller_verdict);
    out +=
        fmt::format("{:<10} {:<14} {:<10} {:>9g}  {:<{}} {:<13} {:<11} {}\n", r.device, r.gpu,
                    r.regime, r.default_limit_W, caps, caps_width, r.decision, r.basis, controller);
  }
  return out;
}
namespace {

nlohmann::json control_json(const StudyControl& c) {
  if (c.run) return to_json(*c.run);
  return {
      {"policy", "regime-gated"},
      {"engaged", false},
      {"reason", c.reason},
      {"skipped_reason", c.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.skipped)},
      {"command", c.command}};
}

}  // namespace

nlohmann::json to_json(const StudyReport& rep) {
  nlohmann::json sweep = nullptr;
  if (rep.sweep) {
    const plan::SearchOutcome& o = rep.sweep->outcome;
    nlohmann::json results = nlohmann::json::array();
    for (const auto& p : plan::by_cap_desc(o.probes)) results.push_back(plan::result_json(p));
    sweep = {{"strategy", plan::to_string(rep.sweep->strategy)},
             {"objective", rep.sweep->objective.text()},
             {"caps_planned_W", rep.plan.caps},
             {"probes", o.probes.size()},
             {"results", results},
             {"stop_reason", o.stop_reason}};
  }
  auto or_null = [](bool present, const auto& v) {
    return present ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json job = nullptr;
  if (!rep.gpu_regimes.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    for (size_t i = 0; i < rep.gpu_regimes.size(); ++i)
      gpus.push_back({{"device", rep.job_devices.at(i)},
                      {"regime", to_string(rep.gpu_regimes[i].regime)},
                      {"confidence", rep.gpu_regimes[i].confidence},
                      {"measurement", regime::to_json(rep.gpu_regimes[i].measurement)}});
    job = {{"devices", rep.job_devices},
           {"gpus", gpus},
           {"measurement",
            rep.job_measurement ? regime::to_json(*rep.job_measurement) : nlohmann::json(nullptr)}};
  }
  return {{"device", rep.device},
          {"workload", rep.workload},
          {"gpu", rep.gpu_regimes.empty()
                      ? rep.info.name
                      : fmt::format("{}x {}", rep.gpu_regimes.size(), rep.info.name)},
          {"job", job},
          {"probe",
           {{"seconds_asked", rep.probe_seconds},
            {"seconds_run", rep.probe_ran_s},
            {"still_heating", rep.still_heating},
            {"end_temp_slope_C_per_min", rep.end_temp_slope_C_per_min}}},
          {"warnings", rep.warnings},
          {"regime", to_json(rep.regime)},
          {"plan",
           {{"sweep", rep.plan.sweep},
            {"caps_W", rep.plan.caps},
            {"why", rep.plan.why},
            {"controller_may_help", rep.plan.controller_may_help}}},
          {"sweep", sweep},
          {"decision",
           rep.sweep ? plan::decision_json(rep.sweep->outcome.decision, decision_view(*rep.sweep))
                     : nlohmann::json(nullptr)},
          {"after", or_null(rep.sweep.has_value(), rep.sweep ? rep.sweep->after : "")},
          {"sweep_command", or_null(rep.plan.sweep, rep.sweep_command)},
          {"control", control_json(rep.control)},
          {"skipped_reason", or_null(!rep.skipped.empty(), rep.skipped)},
          {"stored_as", or_null(rep.sweep && rep.sweep->stored_id,
                                rep.sweep && rep.sweep->stored_id
                                    ? "sweep:" + std::to_string(*rep.sweep->stored_id)
                                    : std::string())}};
}

}  // namespace regime::session
