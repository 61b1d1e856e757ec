// regime study --device D (--workload sim:NAME | -- CMD...) [--objective O]
//   [--strategy adaptive|exhaustive] [--probe-seconds S] [--actuate] [--apply] [--json] [--out DIR]
// The main job: probe the pair at the current limit, classify it, sweep the caps its regime
// warrants (a physical GPU only with --actuate; never under REGIME_READ_ONLY), decide, report.
// Every limit change goes through PowerLimitGuard: the original limit is restored unless --apply.
#include "study/study.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "act/power_limit_guard.hpp"
#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "cli/command.hpp"
#include "cli/open_for_workload.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/shell.hpp"
#include "device/registry.hpp"
#include "plan/render.hpp"
#include "plan/run_probers.hpp"
#include "plan/search.hpp"
#include "plan/twin_curve.hpp"
#include "run/process_workload.hpp"
#include "run/run_loop.hpp"
#include "run/wall_clock.hpp"
#include "trace/csv.hpp"

namespace regime::cli {

namespace {

namespace fs = std::filesystem;

struct StudyArgs {
  std::string device;
  std::string workload;
  std::vector<std::string> command;
  std::string objective = "energy";
  std::string strategy = "adaptive";
  double probe_seconds = 60;
  std::string step_regex;
  bool actuate = false;
  bool apply = false;
  bool json = false;
  std::string out_dir;
  plan::ProbeBudget budget;
};

struct SweepResult {
  plan::SearchOutcome outcome;
  std::string after;  // what was applied or restored
};

void validate(const StudyArgs& a) {
  if (a.command.empty() == a.workload.empty())
    throw Error(ErrorKind::InvalidArgument,
                "give either --workload sim:NAME or a command after --, e.g. "
                "regime study --device nvml:0 -- python3 train.py");
  if (!a.workload.empty() && a.workload.rfind("sim:", 0) != 0)
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--workload '{}': expected sim:NAME (a command goes after --)", a.workload));
  if (!(a.probe_seconds >= 1 && a.probe_seconds <= 3600))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--probe-seconds must be in [1, 3600] s, got {}", a.probe_seconds));
  plan::parse_strategy(a.strategy);
  plan::parse_objective(a.objective);
}

WorkloadPtr make_workload(const StudyArgs& a, Gpu& gpu, const WallClock& wall) {
  if (a.command.empty()) return make_builtin_workload(a.workload, gpu);
  ProcessOptions po;
  po.argv = a.command;
  if (!a.step_regex.empty()) po.step_regex = a.step_regex;
  po.stdout_to_stderr = a.json;  // stdout carries only the JSON
  return std::make_unique<ProcessWorkload>(po, wall);
}

// Step 1: one run at the current limit, measured and classified (the probe's building blocks;
// nothing is changed). With --out the trace goes to DIR/probe.trace.csv and its siblings.
RegimeReport probe_pair(const StudyArgs& a, Gpu& gpu, const GpuInfo& info, WallClock& wall) {
  WorkloadPtr work = make_workload(a, gpu, wall);
  RunOptions o;
  o.duration_s = a.probe_seconds;
  RunStats stats;
  Trace trace = run(gpu, *work, o, clock_for(gpu, wall), &stats);
  if (!a.out_dir.empty()) {
    fs::path dir(a.out_dir);
    write_trace_csv(dir / "probe.trace.csv", trace.samples);
    write_steps_csv(dir / "probe.steps.csv", trace.steps);
    if (!trace.power_points.empty()) write_power_csv(dir / "probe.power.csv", trace.power_points);
  }
  auto status = work->exit_status();
  if (status && *status != 0 && stats.ended_by != RunEnd::Duration)
    throw plan::WorkloadEnded(
        fmt::format("the workload exited with status {} during the probe", *status), status);
  if (!a.command.empty() && trace.steps.empty())
    std::cerr << "regime: no step markers arrived during the probe, so the figures are per "
                 "second; mark steps with python/regime_step or --step-regex\n";
  return classify(measure(trace, MeasureOptions{}), info);
}

// Step 3: the sweep over the planned caps, through the guard; applied or restored at the end.
SweepResult sweep_pair(const StudyArgs& a, Gpu& gpu, const GpuInfo& info,
                       const study::SweepPlan& sp, const ActuationPolicy& policy, WallClock& wall) {
  plan::SearchOptions opt;
  opt.strategy = plan::parse_strategy(a.strategy);
  opt.decision.objective = plan::parse_objective(a.objective);
  opt.decision.default_limit_W = info.default_limit_W;
  opt.decision.max_power_W = info.max_limit_W;
  opt.caps = sp.caps;
  opt.fitter = plan::curve_fitter_for(info.name);
  opt.classify = [info](const Measurement& m) -> std::optional<Regime> {
    return classify(m, info).regime;
  };
  if (!a.json)
    opt.on_probe = [](const plan::ProbeResult& p) {
      std::cerr << fmt::format("probe {:.1f} W: {:.4g} J/step, {:.4g} s/step, {} steps\n", p.cap_W,
                               p.measurement.energy_per_step_J, p.measurement.time_per_step_s,
                               p.measurement.steps);
    };
  PowerLimitGuard guard(gpu, policy);
  WorkloadPtr w = make_workload(a, gpu, wall);
  SweepResult r;
  r.outcome = plan::live_search(gpu, *w, guard, a.budget,
                                [&](plan::Prober& p) { return plan::search(p, opt); });
  const plan::Decision& d = r.outcome.decision;
  if (a.apply && !d.keep_default) {
    double enforced = guard.set(d.cap_W);
    guard.keep();
    r.after = fmt::format(
        "applied: {:g} W left set (enforced {:g} W); the original {:g} W is in the journal "
        "under {}: `regime restore` brings it back",
        d.cap_W, enforced, guard.original_limit_W().value_or(info.enforced_limit_W),
        state_dir().string());
  } else {
    guard.restore();
    r.after = fmt::format("restored the original limit {:g} W",
                          guard.original_limit_W().value_or(info.enforced_limit_W));
    if (a.apply)
      r.after += " (--apply: the decision keeps the default, nothing to apply)";
    else if (!d.keep_default)
      r.after += " (--apply would leave the chosen cap set)";
  }
  return r;
}

nlohmann::json sweep_json(const StudyArgs& a, const study::SweepPlan& sp,
                          const plan::SearchOutcome& o) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& p : plan::by_cap_desc(o.probes)) results.push_back(plan::result_json(p));
  return {{"strategy", a.strategy},    {"objective", plan::parse_objective(a.objective).text()},
          {"caps_planned_W", sp.caps}, {"probes", o.probes.size()},
          {"results", results},        {"stop_reason", o.stop_reason}};
}

void print_text(const StudyArgs& a, const GpuInfo& info, const std::string& workload,
                const RegimeReport& report, const study::SweepPlan& sp,
                const std::optional<SweepResult>& sweep, const std::string& skipped) {
  std::cout << fmt::format("study of {} on {} ({}), limit {:g} W (default {:g} W)\n\n", workload,
                           a.device, info.name, info.enforced_limit_W, info.default_limit_W);
  std::cout << "1. probe at the current limit (" << a.probe_seconds << " s):\n";
  std::cout << format_report(report) << "\n";
  if (!sp.sweep) {
    std::cout << "2. no sweep: " << sp.why << "\n";
    return;
  }
  std::cout << "2. sweep: " << sp.why << "\n";
  if (!sweep) {
    std::cout << "   not run: " << skipped << "\n";
    return;
  }
  const plan::SearchOutcome& o = sweep->outcome;
  std::cout << fmt::format("   strategy {}, objective {}, {} probe(s) of {} planned cap(s)\n",
                           a.strategy, plan::parse_objective(a.objective).text(), o.probes.size(),
                           sp.caps.size());
  std::cout << plan::results_table(o.probes, info.default_limit_W, "step");
  std::cout << "   search: " << o.stop_reason << "\n\n";
  std::cout << "3. " << plan::decision_text(o.decision);
  if (!o.decision.keep_default)
    std::cout << "   " << study::change_text(o.decision, o.probes, info.default_limit_W) << "\n";
  std::cout << "\n";
  std::cout << "4. " << sweep->after << "\n";
}

int study_main(const StudyArgs& a) {
  validate(a);
  GpuPtr gpu = open_for_workload(a.device, !a.command.empty());
  if (a.apply && gpu->is_physical() && !a.actuate)
    throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");
  if (!a.out_dir.empty()) fs::create_directories(a.out_dir);
  GpuInfo info = gpu->info();
  std::string workload = a.command.empty() ? a.workload : command_line(a.command);
  WallClock wall;

  RegimeReport report = probe_pair(a, *gpu, info, wall);
  study::SweepPlan sp = study::plan_sweep(report, info);

  ActuationPolicy policy = ActuationPolicy::from_flags(a.actuate);
  std::string skipped;
  std::string command = study::sweep_command(
      {a.device, a.workload, a.command, a.step_regex, a.strategy, a.objective}, sp.caps);
  if (!sp.sweep) {
    skipped = sp.why;
  } else if (policy.read_only) {
    skipped = "REGIME_READ_ONLY is set: nothing is changed. To sweep, unset it and run: " + command;
  } else if (gpu->is_physical() && !a.actuate) {
    skipped =
        "a sweep changes the power limit of this real GPU, and --actuate was not given: "
        "nothing was changed. To sweep, run: " +
        command;
  }
  std::optional<SweepResult> sweep;
  if (skipped.empty()) sweep = sweep_pair(a, *gpu, info, sp, policy, wall);

  nlohmann::json j = {
      {"device", a.device},
      {"workload", a.command.empty() ? a.workload : command_line(a.command)},
      {"gpu", info.name},
      {"regime", to_json(report)},
      {"plan",
       {{"sweep", sp.sweep},
        {"caps_W", sp.caps},
        {"why", sp.why},
        {"controller_may_help", sp.controller_may_help}}},
      {"sweep", sweep ? sweep_json(a, sp, sweep->outcome) : nlohmann::json(nullptr)},
      {"decision", sweep ? study::decision_json(sweep->outcome.decision, sweep->outcome.probes,
                                                info.default_limit_W)
                         : nlohmann::json(nullptr)},
      {"after", sweep ? nlohmann::json(sweep->after) : nlohmann::json(nullptr)},
      {"sweep_command", sp.sweep ? nlohmann::json(command) : nlohmann::json(nullptr)},
      {"skipped_reason", skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(skipped)}};
  if (!a.out_dir.empty()) write_file_atomic(fs::path(a.out_dir) / "study.json", j.dump(2) + "\n");
  if (a.json) {
    print_json(j);
  } else {
    print_text(a, info, workload, report, sp, sweep, skipped);
    if (!a.out_dir.empty())
      std::cout << fmt::format("\nwrote {}/probe.trace.csv, probe.steps.csv and study.json\n",
                               a.out_dir);
  }
  return 0;
}

const CommandRegistrar reg("study", [](CLI::App& root, Context& ctx) {
  auto a = std::make_shared<StudyArgs>();
  auto* sub = root.add_subcommand(
      "study",
      "The main job: probe a GPU + workload pair, name its regime, sweep power caps if the "
      "regime warrants it, decide and report. A real GPU is changed only with --actuate.");
  sub->add_option("--device", a->device, "nvml:N or sim:MODEL")->required();
  auto* workload =
      sub->add_option("--workload", a->workload, "Built-in workload, e.g. sim:resnet50");
  auto* command = sub->add_option("command", a->command, "The workload command, after --");
  workload->excludes(command);
  sub->add_option("--objective", a->objective,
                  "energy | edp | zeus:ETA | max-slowdown:PCT (default energy)");
  sub->add_option("--strategy", a->strategy, "adaptive | exhaustive (default adaptive)");
  sub->add_option("--probe-seconds", a->probe_seconds,
                  "Length of the probe at the current limit, s (simulated s on sim:)")
      ->capture_default_str();
  sub->add_option("--step-regex", a->step_regex,
                  "A line of the command's output matching this marks the end of a step");
  sub->add_option("--settle-s", a->budget.settle_s,
                  "Seconds to let power settle after a cap change (default 5)");
  sub->add_option("--probe-s", a->budget.max_probe_s,
                  "Most seconds measured per cap (default 120)");
  sub->add_flag("--actuate", a->actuate, "Allow changing the limit of a real (NVML) GPU");
  sub->add_flag("--apply", a->apply,
                "Leave the chosen cap set (journaled; `regime restore` undoes it)");
  sub->add_flag("--json", a->json,
                "Machine-readable output: stdout carries only the JSON object; a command's own "
                "stdout goes to stderr");
  sub->add_option("--out", a->out_dir, "Folder for the probe trace and study.json");
  sub->callback([a, &ctx] {
    try {
      ctx.exit_status = study_main(*a);
    } catch (const plan::WorkloadEnded& e) {
      std::cerr << fmt::format("regime: study stopped: {}; the original power limit was restored\n",
                               e.what());
      ctx.exit_status = e.regime_exit_code();
    }
  });
});

}  // namespace
}  // namespace regime::cli
