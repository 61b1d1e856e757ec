// regime control --device D --policy thermal[:k=v,...]|phase[:k=v,...]|regime-gated[:inner=...]
// [--seconds S] [--evaluate [--windows N]] [--dry-run] [--actuate] [--db FILE] [--json]
// (--workload sim:NAME | -- CMD ARGS...): runs the workload while a controller moves the power
// limit through the guard (src/session/control/control.hpp); the original limit is restored at the
// end.
#include "session/control/control.hpp"

#include <fmt/core.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "cli/task_progress.hpp"
#include "common/error.hpp"
#include "session/control/control_view.hpp"

namespace regime::cli {

namespace {

// --evaluate without --seconds: the least run the session demands for the opened cards
// (session::EvaluationLength), rounded up to whole minutes, and why, said on stderr.
double evaluation_seconds(const session::EvaluationLength& need, int windows, std::string& why) {
  const double seconds = 60 * std::ceil(need.min_s / 60);
  why = fmt::format(
      "control --evaluate: running {:.0f} s ({:.0f} min) so that each of the {} windows can "
      "settle ({:.0f} s, 3 thermal time constants of this card) and be measured; --seconds sets "
      "another length",
      seconds, seconds / 60, windows, need.settle_s);
  return seconds;
}

}  // namespace

// A controller runs beside a whole training job, but not unbounded: the run's samples are kept.
constexpr double kMaxControlSeconds = 604800;

void add_control(CLI::App& root, Context&) {
  auto r = std::make_shared<session::ControlRequest>();
  auto device = std::make_shared<std::string>();
  auto policy = std::make_shared<std::string>(r->policy.text);
  auto json = std::make_shared<bool>(false);
  auto* sub = root.add_subcommand(
      "control",
      "Run a workload while a controller moves the power limit (thermal; phase: each phase of "
      "the job at its own cap; or regime-gated: probe first and control only a thermal-bound "
      "pair); the original limit is restored.");
  sub->add_option("--device", *device,
                  "Device: nvml:N, sim:MODEL, or one job's GPUs (nvml:0,1, nvml:all, nvml:job), "
                  "each with its own controller")
      ->required();
  auto db = std::make_shared<std::string>();
  sub->add_option("--db", *db, "Run database that keeps the run (default: STATE_DIR/runs.sqlite)");
  sub->add_option("--policy", *policy,
                  "thermal[:target_C=..,band_C=..,step_W=..,period_s=..,dwell_s=..], "
                  "phase[:observe_s=..,learn_s=..,caps=..,slowdown_pct=..,min_gain_pct=..] or "
                  "regime-gated[:inner=thermal|phase,probe_s=..,<inner keys>]")
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
                  "Each line of the command's output matching this regex (RE2 syntax) ends a "
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
  sub->callback([r, device, policy, db, json, quiet, seconds] {
    r->device = parse_device_set(*device);
    r->policy = control::parse_policy(*policy);  // NAME[:key=value,...], control/thermal.hpp
    r->db = DatabaseLocation::from_text(*db);
    const bool choose_length = r->evaluate && seconds->count() == 0;
    if (!choose_length) check_sample_count(r->seconds, r->sample_ms);
    r->workload.stdout_to_stderr = *json;
    TaskProgressLine progress(stderr, progress_wanted(stderr, *quiet), "control");
    // A real GPU runs on the wall clock: the bar is the run's length. A simulated run is faster
    // than its simulated seconds: only the elapsed time is shown.
    const bool wall_clock = !r->device.simulated();
    if (wall_clock && !choose_length) progress.set_total_time(r->seconds);
    session::ChooseSeconds choose;
    if (choose_length)
      choose = [&progress, r, wall_clock](const session::EvaluationLength& need) {
        std::string why;
        const double chosen_s = evaluation_seconds(need, r->windows, why);
        progress.print("regime: " + why + "\n");
        check_sample_count(chosen_s, r->sample_ms);
        if (wall_clock) progress.set_total_time(chosen_s);
        return chosen_s;
      };
    session::ControlReport rep = session::run_control(*r, choose);
    progress.stop();
    if (*json) return print_json(session::to_json(rep));
    if (rep.gpus.empty())
      for (const auto& w : rep.warnings) std::cerr << w << "\n";
    std::cout << session::to_text(rep);
  });
}

}  // namespace regime::cli
