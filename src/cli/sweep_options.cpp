#include "cli/sweep_options.hpp"

#include <fmt/core.h>

#include "cli/command.hpp"

namespace regime::cli {

void add_sweep_settings(CLI::App* sub, session::SweepSettings& s, SweepSettingsText& text,
                        session::WorkloadSpec& w) {
  sub->add_option("--strategy", text.strategy, "adaptive | exhaustive (default adaptive)");
  sub->add_option("--objective", text.objective,
                  "max-slowdown:PCT | energy | edp | zeus:ETA (default max-slowdown:10: least "
                  "energy per step at most 10% slower; the output also shows the unconstrained "
                  "optimum, --objective energy)");
  sub->add_option("--step-regex", w.step_regex,
                  "A line of the command's output matching this regex (RE2 syntax) marks the end "
                  "of a step");
  sub->add_option("--settle-s", s.budget.settle_s,
                  "Least seconds to let power and temperature settle after a cap change (default "
                  "5); then they must be flat (under 0.5 C/min and 0.5%/min over 10 s)")
      ->check(number_in(0, 3600));
  sub->add_option("--max-settle-s", s.budget.max_settle_s,
                  "Most seconds to wait for them to settle (default 300); a window measured "
                  "before says so")
      ->check(number_in(0, 86400));
  sub->add_option("--probe-s", s.budget.max_probe_s, "Most seconds measured per cap (default 120)")
      ->check(number_in(0, 86400, true));
  sub->add_flag("--per-second", s.budget.accept_per_second,
                "Without step markers, decide on energy per second (every figure then says per "
                "second); without this flag such a sweep is refused");
  sub->add_option("--db", text.db,
                  "Run database that keeps the sweep (default: STATE_DIR/runs.sqlite)");
  sub->add_flag("--apply", s.apply,
                "Leave the chosen cap set (journaled; `regime restore` undoes it)");
  add_workload_as_root(sub, w);
}

void add_workload_as_root(CLI::App* sub, session::WorkloadSpec& w) {
  sub->add_flag("--workload-as-root", w.workload_as_root,
                "Run the command as root under sudo too (by default it runs as the user who ran "
                "sudo, with that user's groups and environment; regime keeps root for NVML)");
}

std::string probe_result_line(const plan::ProbeResult& p) {
  const Measurement& m = p.measurement;
  if (m.per_second)  // no step markers (--per-second): every figure per second
    return fmt::format("probe {:.1f} W: {:.4g} J per second, {:.1f} W, no steps\n", p.cap_W,
                       m.energy_per_step_J, m.avg_power_W);
  return fmt::format("probe {:.1f} W: {:.4g} J/step, {:.4g} s/step, {:.1f} W, {} steps\n", p.cap_W,
                     m.energy_per_step_J, m.time_per_step_s, m.avg_power_W, m.steps);
}

void attach_progress(session::SweepSettings& s, TaskProgressLine& line, bool print_lines) {
  s.on_plan = [&line](size_t most) { line.set_total_units(most); };
  s.on_probe = [&line, print_lines](const plan::ProbeResult& p) {
    const Measurement& m = p.measurement;
    line.unit_done(fmt::format("last {:.0f} W: {:.4g} J/{}", p.cap_W, m.energy_per_step_J,
                               m.per_second ? "s" : "step"));
    if (print_lines) line.print(probe_result_line(p));
  };
}

}  // namespace regime::cli
