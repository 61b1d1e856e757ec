// regime control --device D --policy thermal[:k=v,...]|regime-gated[:inner=thermal,probe_s=S,...]
// [--seconds S] [--evaluate [--windows N]] [--dry-run] [--actuate] [--db FILE] [--json]
// (--workload sim:NAME | -- CMD ARGS...): runs the workload while a controller moves the power
// limit through the guard (src/session/control.hpp); the original limit is restored at the end.
#include "session/control.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "cli/task_progress.hpp"
#include "common/error.hpp"

namespace regime::cli {

namespace {

std::string temp_text(const std::optional<double>& t) {
  return t ? fmt::format("{:.1f} C", *t) : std::string("- C");
}

std::string interval_text(double v, const Interval& ci, int digits) {
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", v, digits, ci.first, digits, ci.second, digits);
}

std::string pct_text(double v, const Interval& ci) {
  return fmt::format("{:+.1f}% [{:+.1f}, {:+.1f}]", v, ci.first, ci.second);
}

void print_evaluation(const session::Evaluation& ev) {
  std::cout << fmt::format(
      "evaluation: after a {:.0f} s lead-in of control (not measured), {} interleaved windows of "
      "{:.0f} s (baseline first and last); the first {:.0f} s of each are dropped while the die "
      "settles\n",
      ev.lead_in_s, ev.windows.size(), ev.window_s, ev.settle_s);
  std::cout << "  window  arm          measured s   steps   energy/step J   time/step s   power W"
               "   temp C   limit W\n";
  for (size_t i = 0; i < ev.windows.size(); ++i) {
    const auto& w = ev.windows[i];
    const Measurement& m = w.measurement;
    std::cout << fmt::format(
        "  {:>6}  {:<11} {:>5.0f}-{:<5.0f} {:>7} {:>15.3f} {:>13.4f} {:>9.1f} "
        "{:>8} {:>9}\n",
        i + 1, w.controlled ? "controlled" : "baseline", w.t0_s, w.t1_s, m.steps,
        m.energy_per_step_J, m.time_per_step_s, m.avg_power_W,
        m.mean_temp_C ? fmt::format("{:.1f}", *m.mean_temp_C) : "-",
        m.mean_limit_W ? fmt::format("{:.0f}", *m.mean_limit_W) : "-");
  }
  auto arm = [](const char* name, const session::ArmFigures& a) {
    std::cout << fmt::format(
        "{:<11} energy per step {} J, time per step {} s ({} windows, {} "
        "steps)\n",
        name, interval_text(a.energy_per_step_J, a.energy_per_step_ci_J, 3),
        interval_text(a.time_per_step_s, a.time_per_step_ci_s, 4), a.windows, a.steps);
  };
  arm("baseline:", ev.baseline);
  arm("controlled:", ev.controlled);
  std::cout << fmt::format(
      "change: energy per step {}, time per step {} (95% intervals, drift removed)\n",
      pct_text(ev.energy_change_pct, ev.energy_change_ci_pct),
      pct_text(ev.time_change_pct, ev.time_change_ci_pct));
  std::cout << fmt::format(
      "verdict: {} (helps: the energy interval lies below -{:g}%; hurts: above +{:g}%, or the "
      "time interval above +{:g}% without an energy gain)\n",
      to_string(ev.verdict), ev.rule.energy_margin_pct, ev.rule.energy_margin_pct,
      ev.rule.time_margin_pct);
}

void print_figures(const session::ControlReport& r);

void print_gpu(const session::ControlReport& r) {
  std::cout << fmt::format("{} on {} ({}), {:.0f} s{}, policy {}{}\n", r.workload, r.device,
                           r.info.name, r.duration_s, r.simulated ? " simulated" : "", r.policy,
                           r.evaluate ? ", evaluated" : "");
  if (r.dry_run)
    std::cout << "dry run: the controller decides and logs what it would set; nothing is set ("
              << r.dry_run_why << ")\n";
  if (r.probe)
    std::cout << fmt::format("probe ({:.0f} s): {} (confidence {:.2f})\n", r.probe_s,
                             to_string(r.probe->regime), r.probe->confidence);
  std::cout << (r.engaged ? "engaged: " : "stayed out: ") << r.reason << "\n";
  if (r.engaged) std::cout << r.controller << ": " << r.controller_text << "\n";
  if (r.dry_run && !r.decisions.empty()) {
    // Every decision, holds included: what the controller saw each period.
    std::cout << "  each decision (at: the limit the controller would have in force by then):\n";
    for (const auto& a : r.decisions)
      std::cout << fmt::format("  t={:7.1f} s  {:>8}  {:6.1f} W  at {:.0f} W: {}  ({})\n", a.t_s,
                               temp_text(a.temp_C), a.power_W.value_or(0), a.old_limit_W,
                               a.new_limit_W == a.old_limit_W
                                   ? std::string("hold")
                                   : fmt::format("would set {:.0f} W", a.new_limit_W),
                               a.why);
  } else {
    for (const auto& a : r.actions)
      std::cout << fmt::format("  t={:7.1f} s  {:>8}  {:6.1f} W  {} {:.0f} -> {:.0f} W  ({})\n",
                               a.t_s, temp_text(a.temp_C), a.power_W.value_or(0),
                               a.applied ? "limit" : "would set", a.old_limit_W, a.new_limit_W,
                               a.why);
  }
  if (r.engaged && r.actions.empty()) std::cout << "  no change was needed\n";
  print_figures(r);
  const bool changed = std::any_of(r.actions.begin(), r.actions.end(),
                                   [](const control::ControlAction& a) { return a.applied; });
  std::cout << fmt::format("limit {:.0f} W before, {:.0f} W after ({})\n", r.limit_before_W,
                           r.limit_after_W, changed ? "restored" : "never changed");
}

// The run's energy and time per step: the evaluation's windows and verdict, or the whole run.
void print_figures(const session::ControlReport& r) {
  if (r.evaluation) {
    print_evaluation(*r.evaluation);
  } else {
    const Measurement& m = r.measurement;
    std::cout << fmt::format(
        "{}energy per step {:.3f} J [{:.3f}, {:.3f}], time per step {:.4f} s [{:.4f}, {:.4f}] "
        "over {} steps ({:.0f}-{:.0f} s)\n",
        r.evaluate ? "baseline (no control ran): " : "", m.energy_per_step_J,
        m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second, m.time_per_step_s,
        m.time_per_step_ci_s.first, m.time_per_step_ci_s.second, m.steps,
        m.window_start_s - r.origin_s, m.window_end_s - r.origin_s);
  }
}

void print_text(const session::ControlReport& r) {
  if (r.gpus.empty()) {
    for (const auto& w : r.warnings) std::cerr << w << "\n";
    print_gpu(r);
  } else {
    std::cout << fmt::format("{} on {}: one job on {} GPUs ({}), {:.0f} s, policy {}{}\n",
                             r.workload, r.device, r.gpus.size(), r.info.name, r.duration_s,
                             r.policy, r.evaluate ? ", evaluated" : "");
    for (const auto& w : r.warnings) std::cout << w << "\n";
    for (const auto& g : r.gpus) {
      std::cout << fmt::format("--- {} ({}) ---\n", g.device, g.info.name);
      print_gpu(g);
    }
    std::cout
        << "--- the job: energy summed over its GPUs, time per step from the shared steps ---\n";
    if (r.job_regime)
      std::cout << fmt::format("regime: {} (the most constrained GPU's)\n",
                               to_string(*r.job_regime));
    print_figures(r);
    if (r.spread)
      std::cout << fmt::format(
          "spread between GPUs: energy per step {:.1f}% of the mean, mean power {:.1f} W\n",
          100 * r.spread->energy_rel, r.spread->power_W);
  }
  if (r.stored_id)
    std::cout << fmt::format("kept as control:{} (`regime runs show control:{}`)\n", *r.stored_id,
                             *r.stored_id);
}

// --evaluate without --seconds: the least run the session demands for these cards
// (session::evaluation_length), rounded up to whole minutes. Keeps the 300 s default, leaving the
// refusal to run_control, for a device or policy it cannot read.
double evaluation_seconds(const session::ControlRequest& r, std::string& why) {
  try {
    const session::EvaluationLength need = session::evaluation_length(r);
    const double seconds = 60 * std::ceil(need.min_s / 60);
    why = fmt::format(
        "control --evaluate: running {:.0f} s ({:.0f} min) so that each of the {} windows can "
        "settle ({:.0f} s, 3 thermal time constants of this card) and be measured; --seconds sets "
        "another length",
        seconds, seconds / 60, r.windows, need.settle_s);
    return seconds;
  } catch (const Error&) {
    return r.seconds;
  }
}

}  // namespace

// A controller runs beside a whole training job, but not unbounded: the run's samples are kept.
constexpr double kMaxControlSeconds = 604800;

void add_control(CLI::App& root, Context&) {
  auto r = std::make_shared<session::ControlRequest>();
  auto json = std::make_shared<bool>(false);
  auto* sub = root.add_subcommand(
      "control",
      "Run a workload while a controller moves the power limit (thermal, or regime-gated: "
      "probe first and control only a thermal-bound pair); the original limit is restored.");
  sub->add_option("--device", r->device,
                  "Device: nvml:N, sim:MODEL, or one job's GPUs (nvml:0,1, nvml:all, nvml:job), "
                  "each with its own controller")
      ->required();
  sub->add_option("--db", r->db,
                  "Run database that keeps the run (default: STATE_DIR/runs.sqlite)");
  sub->add_option("--policy", r->policy,
                  "thermal[:target_C=..,band_C=..,step_W=..,period_s=..,dwell_s=..] or "
                  "regime-gated[:inner=thermal,probe_s=..,<thermal keys>]")
      ->capture_default_str();
  auto* seconds = sub->add_option(
      "--seconds", r->seconds,
      "Run length in seconds, at most a week (simulated seconds on sim: devices); with "
      "--evaluate, long enough for the card's windows by default");
  seconds->capture_default_str()->check(number_in(0, kMaxControlSeconds, true));
  sub->add_option("--sample-ms", r->sample_ms, "Sampling period, ms")
      ->capture_default_str()
      ->check(number_in(1, 10000));
  sub->add_option("--warmup-s", r->warmup_s,
                  "Drop this many seconds as warm-up instead of detecting the steady state")
      ->check(number_in(0, 86400));
  sub->add_option("--step-regex", r->workload.step_regex,
                  "Each line of the command's output matching this (ECMAScript) regex ends a "
                  "step");
  sub->add_flag("--actuate", r->actuate, "Allow changing the power limit of a real GPU");
  sub->add_flag("--dry-run", r->dry_run,
                "Log what the controller would set, with the temperature and power behind each "
                "decision, and set nothing (the default under REGIME_READ_ONLY and on a real GPU "
                "without --actuate)");
  sub->add_flag("--evaluate", r->evaluate,
                "Judge the controller: baseline and controlled windows interleaved on the running "
                "workload, energy and time per step with 95% intervals, and a verdict");
  sub->add_option("--windows", r->windows,
                  "--evaluate: number of windows, odd, baseline first and last")
      ->capture_default_str()
      ->check(number_in(1, 1001));
  add_workload_as_root(sub, r->workload);
  sub->add_flag("--json", *json, "Machine-readable output: stdout carries only the JSON object");
  auto* workload =
      sub->add_option("--workload", r->workload.builtin, "Built-in workload, e.g. sim:resnet50");
  auto* command = sub->add_option("command", r->workload.command, "The command to run (after --)");
  workload->excludes(command);
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet, "No progress line on a terminal's stderr");
  sub->callback([r, json, quiet, seconds] {
    if (r->evaluate && seconds->count() == 0) {
      std::string why;
      r->seconds = evaluation_seconds(*r, why);
      if (!why.empty()) std::cerr << "regime: " << why << "\n";
    }
    check_sample_count(r->seconds, r->sample_ms);
    r->workload.stdout_to_stderr = *json;
    TaskProgressLine progress(stderr, progress_wanted(stderr, *quiet), "control");
    // A real GPU runs on the wall clock: the bar is the run's length. A simulated run is faster
    // than its simulated seconds: only the elapsed time is shown.
    if (!session::on_simulated_clock(r->device)) progress.set_total_time(r->seconds);
    session::ControlReport rep = session::run_control(*r);
    progress.stop();
    if (*json)
      print_json(session::to_json(rep));
    else
      print_text(rep);
  });
}

}  // namespace regime::cli
