// regime sweep --device D (--workload sim:NAME | --workload NAME for replay | -- CMD...)
//   [--caps LIST|auto] [--strategy exhaustive|adaptive] [--objective O] [--mode live|restart]
//   [--actuate] [--apply] [--force] [--json]
// Measures caps, prints the table and the decision. Every limit change goes through
// PowerLimitGuard; the original limit is restored at the end, on error and on signals.
#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "act/power_limit_guard.hpp"
#include "analysis/classify.hpp"
#include "cli/command.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "device/registry.hpp"
#include "device/replay/replay_gpu.hpp"
#include "plan/cap_grid.hpp"
#include "plan/render.hpp"
#include "plan/run_probers.hpp"
#include "plan/search.hpp"
#include "plan/twin_curve.hpp"
#include "run/process_workload.hpp"
#include "run/wall_clock.hpp"

namespace regime::cli {

namespace {

struct SweepArgs {
  std::string device;
  std::string workload;
  std::vector<std::string> command;
  std::string caps = "auto";
  std::string strategy = "adaptive";
  std::string objective = "energy";
  std::string mode = "live";
  bool actuate = false;
  bool apply = false;
  bool force = false;
  bool json = false;
  std::string step_regex;
  plan::ProbeBudget budget;
};

nlohmann::json outcome_json(const SweepArgs& a, const std::string& workload,
                            const plan::SearchOutcome& o, const plan::Objective& objective,
                            plan::Strategy strategy) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& p : plan::by_cap_desc(o.probes)) results.push_back(plan::result_json(p));
  return {{"device", a.device},
          {"workload", workload},
          {"strategy", plan::to_string(strategy)},
          {"objective", objective.text()},
          {"probes", o.probes.size()},
          {"results", results},
          {"decision", plan::to_json(o.decision)},
          {"regime", o.regime ? nlohmann::json(to_string(*o.regime)) : nlohmann::json(nullptr)},
          {"stop_reason", o.stop_reason}};
}

void print_outcome(const SweepArgs& a, const std::string& workload, const plan::SearchOutcome& o,
                   const plan::Objective& objective, plan::Strategy strategy, double default_W,
                   const std::string& unit) {
  std::cout << fmt::format("sweep of {} on {}: strategy {}, objective {}, {} probe(s)\n", workload,
                           a.device, plan::to_string(strategy), objective.text(), o.probes.size());
  if (o.regime) std::cout << fmt::format("regime at the default limit: {}\n", to_string(*o.regime));
  std::cout << plan::results_table(o.probes, default_W, unit);
  std::cout << "search: " << o.stop_reason << "\n";
  std::cout << plan::decision_text(o.decision);
}

void sweep_replay(const SweepArgs& a, ReplayGpu& gpu) {
  if (a.workload.empty())
    throw Error(ErrorKind::InvalidArgument,
                "a replay device needs --workload NAME to pick the rows of the sweep table");
  if (!a.command.empty())
    throw Error(ErrorKind::InvalidArgument, "a replay device runs no command: drop '-- CMD'");
  gpu.select_workload(a.workload);
  GpuInfo info = gpu.info();
  plan::SearchOptions opt;
  opt.strategy = plan::parse_strategy(a.strategy);
  plan::Objective objective = plan::parse_objective(a.objective);
  opt.decision.objective = objective;
  opt.decision.default_limit_W = info.default_limit_W;
  opt.decision.max_power_W = info.max_limit_W;
  opt.force = a.force;
  // The table's caps are the device's settings: "auto" means all of them.
  std::vector<double> caps;
  if (a.caps == "auto") {
    for (const auto& r : gpu.rows()) caps.push_back(r.cap_W);
  } else {
    caps = plan::parse_caps(a.caps, info);
  }
  opt.caps = plan::with_default(caps, info.default_limit_W);
  opt.fitter = plan::curve_fitter_for(gpu.rows().front().gpu);
  ReplayProber prober(gpu);
  auto outcome = plan::search(prober, opt);
  if (a.json) {
    print_json(outcome_json(a, a.workload, outcome, objective, opt.strategy));
  } else {
    print_outcome(a, a.workload, outcome, objective, opt.strategy, info.default_limit_W,
                  gpu.rows().front().unit);
  }
}

// A sim: or NVML device: the workload runs through the run loop, caps through the guard.
void sweep_device(const SweepArgs& a, Gpu& gpu) {
  const bool simulated_work = a.workload.rfind("sim:", 0) == 0;
  if (simulated_work == !a.command.empty() || (!simulated_work && !a.workload.empty()))
    throw Error(ErrorKind::InvalidArgument,
                "give either --workload sim:NAME or a command after '--' (not both)");
  GpuInfo info = gpu.info();
  ActuationPolicy policy = ActuationPolicy::from_flags(a.actuate);
  // Refuse before any work starts: a sweep changes the limit at its first probe.
  check_actuation(policy, info, gpu.is_physical(), info.default_limit_W);
  if (a.apply && gpu.is_physical() && !a.actuate)
    throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");

  plan::SearchOptions opt;
  opt.strategy = plan::parse_strategy(a.strategy);
  plan::Objective objective = plan::parse_objective(a.objective);
  opt.decision.objective = objective;
  opt.decision.default_limit_W = info.default_limit_W;
  opt.decision.max_power_W = info.max_limit_W;
  opt.force = a.force;
  opt.caps = plan::with_default(plan::parse_caps(a.caps, info), info.default_limit_W);
  opt.fitter = plan::curve_fitter_for(info.name);
  opt.classify = [info](const Measurement& m) -> std::optional<Regime> {
    return classify(m, info).regime;
  };
  if (!a.json)
    opt.on_probe = [](const plan::ProbeResult& p) {
      std::cerr << fmt::format("probe {:.1f} W: {:.4g} J/step, {:.4g} s/step, {:.1f} W, {} steps\n",
                               p.cap_W, p.measurement.energy_per_step_J,
                               p.measurement.time_per_step_s, p.measurement.avg_power_W,
                               p.measurement.steps);
    };

  WallClock wall;
  auto make_workload = [&]() -> WorkloadPtr {
    if (simulated_work) return make_builtin_workload(a.workload, gpu);
    ProcessOptions po;
    po.argv = a.command;
    if (!a.step_regex.empty()) po.step_regex = a.step_regex;
    po.stdout_to_stderr = a.json;  // stdout carries only the JSON
    return std::make_unique<ProcessWorkload>(po, wall);
  };
  std::string workload_name = simulated_work ? a.workload : a.command.front();

  PowerLimitGuard guard(gpu, policy);
  plan::SearchOutcome outcome;
  if (a.mode == "restart") {
    plan::RestartProber prober(gpu, make_workload, guard, a.budget);
    outcome = plan::search(prober, opt);
  } else {
    WorkloadPtr w = make_workload();
    outcome = plan::live_search(gpu, *w, guard, a.budget,
                                [&](plan::Prober& p) { return plan::search(p, opt); });
  }
  std::string after;
  if (a.apply && !outcome.decision.keep_default) {
    double enforced = guard.set(outcome.decision.cap_W);
    guard.keep();
    after = fmt::format(
        "applied: {} W left set (enforced {:g} W); the original {:g} W is in the "
        "journal under {}: `regime restore` brings it back",
        outcome.decision.cap_W, enforced, guard.original_limit_W().value_or(0),
        state_dir().string());
  } else {
    guard.restore();
    after = fmt::format("restored the original limit{}",
                        guard.original_limit_W() ? fmt::format(" {:g} W", *guard.original_limit_W())
                                                 : std::string());
    if (a.apply) after += " (--apply: the decision keeps the default, nothing to apply)";
  }
  if (a.json) {
    print_json(outcome_json(a, workload_name, outcome, objective, opt.strategy));
  } else {
    print_outcome(a, workload_name, outcome, objective, opt.strategy, info.default_limit_W, "step");
    std::cout << after << "\n";
  }
}

void run_sweep(const SweepArgs& a) {
  if (a.mode != "live" && a.mode != "restart")
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--mode '{}': expected live or restart", a.mode));
  GpuPtr gpu = open_device(a.device);
  if (auto* replay = dynamic_cast<ReplayGpu*>(gpu.get())) return sweep_replay(a, *replay);
  sweep_device(a, *gpu);
}

const CommandRegistrar reg("sweep", [](CLI::App& root, Context& ctx) {
  auto* sub = root.add_subcommand(
      "sweep", "Measure power caps for a GPU + workload pair and decide which one to keep");
  auto a = std::make_shared<SweepArgs>();
  sub->add_option("--device", a->device, "nvml:N, sim:MODEL or replay:FILE")->required();
  sub->add_option("--workload", a->workload,
                  "sim:NAME, or for a replay device the workload name of the sweep table");
  sub->add_option("--caps", a->caps,
                  "auto (default: the default limit down to the minimum in "
                  "steps of 5%) or a list of watts, e.g. 250,200,150");
  sub->add_option("--strategy", a->strategy, "exhaustive | adaptive (default adaptive)");
  sub->add_option("--objective", a->objective,
                  "energy | edp | zeus:ETA | max-slowdown:PCT (default energy)");
  sub->add_option("--mode", a->mode,
                  "live (one run, caps changed between windows; default) | "
                  "restart (one run per cap)");
  sub->add_flag("--actuate", a->actuate, "Allow changing the limit of a real (NVML) GPU");
  sub->add_flag("--apply", a->apply,
                "Leave the chosen cap set (recorded in the journal; `regime restore` undoes it)");
  sub->add_flag("--force", a->force, "Search even when the pair is underutilized or idle");
  sub->add_flag("--json", a->json,
                "Machine-readable output: stdout carries only the JSON object; a command's own "
                "stdout goes to stderr");
  sub->add_option("--step-regex", a->step_regex,
                  "A line of the command's output matching this marks the end of a step");
  sub->add_option("--settle-s", a->budget.settle_s,
                  "Seconds to let power settle after a cap change (default 5)");
  sub->add_option("--warmup-steps", a->budget.warmup_steps,
                  "Steps skipped after settling (default 3)");
  sub->add_option("--probe-s", a->budget.max_probe_s,
                  "Most seconds measured per cap (default 120)");
  sub->add_option("--probe-steps", a->budget.max_steps,
                  "Most steps measured per cap (default 2000)");
  sub->add_option("--target-ci", a->budget.target_rel_ci,
                  "Stop measuring a cap when the energy-per-step 95% interval is this tight, "
                  "relative half-width (default 0.01)");
  sub->add_option("command", a->command, "The workload command, after --");
  sub->callback([a, &ctx] {
    try {
      run_sweep(*a);
    } catch (const plan::WorkloadEnded& e) {
      // The guard has restored the limit by now (it lives inside run_sweep).
      std::cerr << fmt::format("regime: sweep stopped: {}; the original power limit was restored\n",
                               e.what());
      ctx.exit_status = e.regime_exit_code();
    }
  });
});

}  // namespace
}  // namespace regime::cli
