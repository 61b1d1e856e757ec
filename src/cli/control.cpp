// regime control --device D --policy thermal[:k=v,...]|regime-gated[:inner=thermal,probe_s=S,...]
// [--seconds S] [--actuate] [--json] (--workload sim:NAME | -- CMD ARGS...): runs the workload
// while a controller moves the power limit through the guard (src/session/control.hpp); the
// original limit is restored at the end.
#include "session/control.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "cli/task_progress.hpp"
#include "device/uri.hpp"

namespace regime::cli {

namespace {

std::string temp_text(const std::optional<double>& t) {
  return t ? fmt::format("{:.1f} C", *t) : std::string("- C");
}

void print_text(const session::ControlReport& r) {
  const control::ThermalParams& p = r.thermal;
  std::cout << fmt::format("{} on {} ({}), {:.0f} s{}, policy {}\n", r.workload, r.device,
                           r.info.name, r.duration_s, r.simulated ? " simulated" : "", r.policy);
  if (r.probe)
    std::cout << fmt::format("probe ({:.0f} s): {} (confidence {:.2f})\n", r.probe_s,
                             to_string(r.probe->regime), r.probe->confidence);
  std::cout << (r.engaged ? "engaged: " : "stayed out: ") << r.reason << "\n";
  if (r.engaged)
    std::cout << fmt::format(
        "thermal: target {:.1f} C, band {:.1f} C, step {:.0f} W, period {:.0f} s, dwell {:.0f} s, "
        "limits [{:.0f}, {:.0f}] W\n",
        p.target_C, p.band_C, p.step_W, p.period_s, p.dwell_s, p.min_W, p.max_W);
  for (const auto& a : r.actions)
    std::cout << fmt::format("  t={:7.1f} s  {:>8}  {:6.1f} W  limit {:.0f} -> {:.0f} W  ({})\n",
                             a.t_s, temp_text(a.temp_C), a.power_W.value_or(0), a.old_limit_W,
                             a.new_limit_W, a.why);
  if (r.engaged && r.actions.empty()) std::cout << "  no change was needed\n";
  const Measurement& m = r.measurement;
  std::cout << fmt::format(
      "energy per step {:.3f} J [{:.3f}, {:.3f}], time per step {:.4f} s [{:.4f}, {:.4f}] over "
      "{} steps ({:.0f}-{:.0f} s)\n",
      m.energy_per_step_J, m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second,
      m.time_per_step_s, m.time_per_step_ci_s.first, m.time_per_step_ci_s.second, m.steps,
      m.window_start_s, m.window_end_s);
  std::cout << fmt::format("limit {:.0f} W before, {:.0f} W after ({})\n", r.limit_before_W,
                           r.limit_after_W, r.actions.empty() ? "never changed" : "restored");
}

}  // namespace

void add_control(CLI::App& root, Context&) {
  auto r = std::make_shared<session::ControlRequest>();
  auto json = std::make_shared<bool>(false);
  auto* sub = root.add_subcommand(
      "control",
      "Run a workload while a controller moves the power limit (thermal, or regime-gated: "
      "probe first and control only a thermal-bound pair); the original limit is restored.");
  sub->add_option("--device", r->device, "Device URI: nvml:N or sim:MODEL")->required();
  sub->add_option("--policy", r->policy,
                  "thermal[:target_C=..,band_C=..,step_W=..,period_s=..,dwell_s=..] or "
                  "regime-gated[:inner=thermal,probe_s=..,<thermal keys>]")
      ->capture_default_str();
  sub->add_option("--seconds", r->seconds,
                  "Run length in seconds (simulated seconds on sim: devices)")
      ->capture_default_str();
  sub->add_option("--sample-ms", r->sample_ms, "Sampling period, ms")->capture_default_str();
  sub->add_option("--warmup-s", r->warmup_s,
                  "Drop this many seconds as warm-up instead of detecting the steady state");
  sub->add_option("--step-regex", r->workload.step_regex,
                  "Each line of the command's output matching this (ECMAScript) regex ends a "
                  "step");
  sub->add_flag("--actuate", r->actuate, "Allow changing the power limit of a real GPU");
  add_workload_as_root(sub, r->workload);
  sub->add_flag("--json", *json, "Machine-readable output: stdout carries only the JSON object");
  auto* workload =
      sub->add_option("--workload", r->workload.builtin, "Built-in workload, e.g. sim:resnet50");
  auto* command = sub->add_option("command", r->workload.command, "The command to run (after --)");
  workload->excludes(command);
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet, "No progress line on a terminal's stderr");
  sub->callback([r, json, quiet] {
    r->workload.stdout_to_stderr = *json;
    TaskProgressLine progress(stderr, progress_wanted(stderr, *quiet), "control");
    // A real GPU runs on the wall clock: the bar is the run's length. A simulated run is faster
    // than its simulated seconds: only the elapsed time is shown.
    if (parse_device_uri(r->device).scheme != "sim") progress.set_total_time(r->seconds);
    session::ControlReport rep = session::run_control(*r);
    progress.stop();
    if (*json)
      print_json(session::to_json(rep));
    else
      print_text(rep);
  });
}

}  // namespace regime::cli
