// regime sweep --device D (--workload sim:NAME | --workload NAME for replay | -- CMD...)
//   [--caps LIST|auto] [--strategy exhaustive|adaptive] [--objective O] [--mode live|restart]
//   [--actuate] [--apply] [--force] [--prior PREDICTOR] [--json]
// Measures caps, prints the table and the decision (src/session/sweep/sweep.hpp does the work).
#include "session/sweep/sweep.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/llm_options.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "session/sweep/sweep_view.hpp"

namespace regime::cli {

void add_sweep(CLI::App& root, Context& ctx) {
  auto* sub = root.add_subcommand(
      "sweep", "Measure power caps for a GPU + workload pair and decide which one to keep");
  auto r = std::make_shared<session::SweepRequest>();
  struct Text {
    std::string device;
    std::string caps = "auto";
    SweepSettingsText settings;
  };
  auto text = std::make_shared<Text>();
  auto json = std::make_shared<bool>(false);
  session::SweepSettings& s = r->settings;
  sub->add_option(
         "--device", text->device,
         "nvml:N, sim:MODEL or replay:FILE; one job on several GPUs: nvml:0,1, nvml:all or "
         "nvml:job (one cap for all of them)")
      ->required();
  sub->add_option("--workload", r->workload.builtin,
                  "sim:NAME, or for a replay device the workload name of the sweep table");
  sub->add_option("--caps", text->caps,
                  "auto (default: the default limit down to the minimum in "
                  "steps of 5%) or a list of watts, e.g. 250,200,150");
  add_sweep_settings(sub, s, text->settings, r->workload);
  sub->add_option("--mode", text->settings.mode,
                  "live (one run, caps changed between windows; default) | "
                  "restart (one run per cap)");
  sub->add_flag("--actuate", r->actuate, "Allow changing the limit of a real (NVML) GPU");
  sub->add_flag("--force", s.force, "Search even when the pair is underutilized or idle");
  sub->add_option("--prior", text->settings.prior,
                  "Adaptive: a predictor (spec-baseline, twin, llm:zero-shot, llm:spec) whose "
                  "predicted draw places the first probe below the default (docs/predict.md)");
  add_llm_options(sub, s.llm);
  sub->add_flag("--json", *json,
                "Machine-readable output: stdout carries only the JSON object; a command's own "
                "stdout goes to stderr");
  sub->add_option("--warmup-steps", s.budget.warmup_steps,
                  "Steps skipped after settling (default 3)")
      ->check(number_in(0, 1000000));
  sub->add_option("--probe-steps", s.budget.max_steps,
                  "Most steps measured per cap (default 2000; at least the 10 an interval needs)")
      ->check(number_in(10, 1e9));
  sub->add_option("--target-ci", s.budget.target_rel_ci,
                  "Stop measuring a cap when the energy-per-step 95% interval is this tight, "
                  "relative half-width (default 0.01)")
      ->check(number_in(0, 1, true));
  sub->add_option("--table-out", r->table_out,
                  "Also write the measured caps as a sweep table CSV (`regime recommend --sweep "
                  "FILE` decides it again)");
  sub->add_option("command", r->workload.command, "The workload command, after --");
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet,
                "Nothing on stderr while it runs: no progress line and no line per cap (the "
                "result is printed as usual; errors and warnings still go to stderr)");
  sub->callback([r, text, json, quiet, &ctx] {
    r->device = parse_device_set(text->device);
    r->caps = parse_caps_spec(text->caps);
    r->settings = parse_sweep_settings(text->settings, r->settings);
    r->workload.stdout_to_stderr = *json;  // stdout carries only the JSON
    TaskProgressLine progress(stderr, progress_wanted(stderr, *quiet), "sweep");
    attach_progress(r->settings, progress, !*json && !*quiet);
    session::SweepReport rep = session::run_sweep(*r);
    progress.stop();
    if (*json)
      print_json(session::to_json(rep));
    else
      std::cout << session::to_text(rep);
    // Only after the results are out: a store that failed still fails the command.
    if (rep.store_failure)
      ctx.exit_status = report_store_failure(session::store_failure_text(*rep.store_failure));
  });
}

}  // namespace regime::cli
