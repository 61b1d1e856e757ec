#include "session/study.hpp"

#include <fmt/core.h>

#include <filesystem>

#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "plan/render.hpp"
#include "run/run_loop.hpp"
#include "trace/csv.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

void validate(const StudyRequest& r) {
  session::validate(r.workload, "regime study --device nvml:0 -- python3 train.py");
  if (!(r.probe_seconds >= 1 && r.probe_seconds <= 3600))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--probe-seconds must be in [1, 3600] s, got {}", r.probe_seconds));
  plan::parse_strategy(r.settings.strategy);
  plan::parse_objective(r.settings.objective);
}

// One run at the current limit, measured and classified; nothing is changed. With an output
// folder the trace goes to DIR/probe.trace.csv and its siblings.
RegimeReport probe_pair(const StudyRequest& r, Target& target, const GpuInfo& info,
                        std::vector<std::string>& warnings, Trace& trace) {
  WorkloadPtr work = target.make_workload(r.workload);
  RunOptions o;
  o.duration_s = r.probe_seconds;
  RunStats stats;
  trace = run(target.gpu(), *work, o, target.clock(), &stats);
  if (!r.out_dir.empty()) {
    fs::path dir(r.out_dir);
    write_trace_csv(dir / "probe.trace.csv", trace.samples);
    write_steps_csv(dir / "probe.steps.csv", trace.steps);
    if (!trace.power_points.empty()) write_power_csv(dir / "probe.power.csv", trace.power_points);
  }
  auto status = work->exit_status();
  if (status && *status != 0 && stats.ended_by != RunEnd::Duration)
    throw WorkloadFailed(
        fmt::format("the workload exited with status {} during the probe", *status), status);
  if (!r.workload.command.empty() && trace.steps.empty())
    warnings.push_back(
        "no step markers arrived during the probe, so the figures are per second; mark steps "
        "with python/regime_step or --step-regex");
  return classify(measure(trace, MeasureOptions{}), info);
}

}  // namespace

StudyReport run_study(const StudyRequest& r) {
  validate(r);
  Target target = open_target(r.device);
  // A command on a simulated device is refused before anything runs.
  target.check_can_run(r.workload);
  if (r.settings.apply && target.gpu().is_physical() && !r.actuate)
    throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");
  if (!r.out_dir.empty()) fs::create_directories(r.out_dir);

  StudyReport rep;
  rep.device = r.device;
  rep.workload = r.workload.display_name();
  rep.probe_seconds = r.probe_seconds;
  rep.info = target.gpu().info();
  rep.regime = probe_pair(r, target, rep.info, rep.warnings, rep.probe_trace);
  rep.plan = plan::plan_sweep(rep.regime, rep.info);
  rep.sweep_command = plan::sweep_command(
      {r.device, r.workload.builtin, r.workload.command, r.workload.step_regex.value_or(""),
       r.settings.strategy, r.settings.objective},
      rep.plan.caps);

  ActuationPolicy policy = ActuationPolicy::from_flags(r.actuate);
  if (!rep.plan.sweep) {
    rep.skipped = rep.plan.why;
  } else if (policy.read_only) {
    rep.skipped = "REGIME_READ_ONLY is set: nothing is changed. To sweep, unset it and run: " +
                  rep.sweep_command;
  } else if (target.gpu().is_physical() && !r.actuate) {
    rep.skipped =
        "a sweep changes the power limit of this real GPU, and --actuate was not given: "
        "nothing was changed. To sweep, run: " +
        rep.sweep_command;
  }
  if (rep.skipped.empty()) {
    rep.sweep = sweep_target(target, r.workload, rep.plan.caps, r.settings, policy);
    keep_sweep(*rep.sweep, "study", to_json(rep, r.settings), r.settings.db);
  }
  if (!r.out_dir.empty())
    write_file_atomic(fs::path(r.out_dir) / "study.json", to_json(rep, r.settings).dump(2) + "\n");
  return rep;
}

nlohmann::json to_json(const StudyReport& rep, const SweepSettings& s) {
  nlohmann::json sweep = nullptr;
  if (rep.sweep) {
    const plan::SearchOutcome& o = rep.sweep->outcome;
    nlohmann::json results = nlohmann::json::array();
    for (const auto& p : plan::by_cap_desc(o.probes)) results.push_back(plan::result_json(p));
    sweep = {{"strategy", s.strategy},
             {"objective", plan::parse_objective(s.objective).text()},
             {"caps_planned_W", rep.plan.caps},
             {"probes", o.probes.size()},
             {"results", results},
             {"stop_reason", o.stop_reason}};
  }
  auto or_null = [](bool present, const auto& v) {
    return present ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  return {{"device", rep.device},
          {"workload", rep.workload},
          {"gpu", rep.info.name},
          {"regime", to_json(rep.regime)},
          {"plan",
           {{"sweep", rep.plan.sweep},
            {"caps_W", rep.plan.caps},
            {"why", rep.plan.why},
            {"controller_may_help", rep.plan.controller_may_help}}},
          {"sweep", sweep},
          {"decision",
           rep.sweep ? plan::decision_json(rep.sweep->outcome.decision, rep.sweep->outcome.probes,
                                           rep.info.default_limit_W)
                     : nlohmann::json(nullptr)},
          {"after", or_null(rep.sweep.has_value(), rep.sweep ? rep.sweep->after : "")},
          {"sweep_command", or_null(rep.plan.sweep, rep.sweep_command)},
          {"skipped_reason", or_null(!rep.skipped.empty(), rep.skipped)},
          {"stored_as", or_null(rep.sweep && rep.sweep->stored_id,
                                rep.sweep && rep.sweep->stored_id
                                    ? "sweep:" + std::to_string(*rep.sweep->stored_id)
                                    : std::string())}};
}

}  // namespace regime::session
