// regime probe --device D [--seconds S] ... (--workload sim:NAME | -- CMD ARGS...): one short run,
// measured and classified; the trace, steps and a run record are saved
// (src/session/probe/probe.hpp). Never changes a limit.
#include "session/probe/probe.hpp"

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "session/probe/probe_view.hpp"
#include "session/site/command_gpus.hpp"

namespace regime::cli {

void add_probe(CLI::App& root, Context& ctx) {
  auto r = std::make_shared<session::ProbeRequest>();
  auto device = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto* sub = root.add_subcommand(
      "probe",
      "Run a workload briefly while sampling the GPU; measure time and energy per step and name "
      "the regime. Never changes a power limit.");
  sub->add_option(
         "--device", *device,
         "Device URI: nvml:N or sim:MODEL; several GPUs of one job: nvml:0,1, nvml:all, or "
         "nvml:job (the GPUs of the command's CUDA_VISIBLE_DEVICES)")
      ->required();
  sub->add_option("--seconds", r->seconds,
                  "Run length in seconds (simulated seconds on sim: devices); a command still "
                  "running then is stopped (SIGTERM, SIGKILL after 10 s)")
      ->capture_default_str()
      ->check(number_in(0, 86400, true));
  sub->add_option("--sample-ms", r->sample_ms,
                  "Sampling period of the cheap fields, ms (default: 1000 on a real GPU, whose "
                  "power comes from the driver's 20 ms buffer; 10 on sim:)")
      ->check(number_in(1, 10000));
  sub->add_option("--energy-period-s", r->energy_period_s,
                  "Seconds between reads of the energy counter, also read at the start and the "
                  "end (default: 30 on a real GPU, where a read costs milliseconds of CPU and "
                  "the power buffer shapes the energy between reads; 5 on sim:)")
      ->check(number_in(0, 3600, true));
  sub->add_option("--warmup-s", r->warmup_s,
                  "Drop this many seconds as warm-up instead of detecting the steady state")
      ->check(number_in(0, 86400));
  auto* regex = sub->add_option("--step-regex", r->workload.step_regex,
                                "Each line of the command's output matching this regex (RE2 "
                                "syntax) ends a step");
  auto* no_steps = sub->add_flag("--no-steps", r->no_steps,
                                 "No step markers: time windows only, figures per second");
  regex->excludes(no_steps);
  sub->add_option("--trace-out", r->trace_out,
                  "Trace CSV to write (default: STATE_DIR/runs/run-ID.trace.csv); steps go to "
                  "the sibling .steps.csv");
  auto db = std::make_shared<std::string>();
  sub->add_option("--db", *db, "Run database (default: STATE_DIR/runs.sqlite)");
  sub->add_flag("--json", *json,
                "Machine-readable output: stdout carries only the JSON object; the command's own "
                "stdout goes to stderr");
  sub->add_flag("--quiet", *quiet, "No progress line on a terminal's stderr");
  auto* workload =
      sub->add_option("--workload", r->workload.builtin, "Built-in workload, e.g. sim:resnet50");
  auto* command =
      sub->add_option("command", r->workload.command, "The command to run and watch (after --)");
  workload->excludes(command);
  add_workload_as_root(sub, r->workload);
  sub->callback([r, device, db, json, quiet, &ctx] {
    r->device = parse_device_set(*device);
    r->db = DatabaseLocation::from_text(*db);
    check_sample_count(r->seconds, r->sample_ms.value_or(session::kSimulatedSampleMs));
    r->workload.stdout_to_stderr = *json;  // stdout carries only the JSON
    ProgressLine progress(stderr, progress_wanted(stderr, *quiet));
    session::ProbeRequest request = *r;
    if (progress.enabled())
      request.on_progress = [&progress](const session::ProbeProgress& pr) { progress.update(pr); };
    if (session::runs_as_job(request.device)) {
      session::JobProbeReport jp = session::run_job_probe(request);
      progress.clear();
      print_warnings(jp.warnings);
      ctx.exit_status = jp.exit_status;
      if (*json) return print_json(session::to_json(jp));
      std::cout << session::to_text(jp);
      return;
    }
    session::ProbeReport p = session::run_probe(request);
    progress.clear();
    print_warnings(p.warnings);
    ctx.exit_status = p.exit_status;
    if (!p.report) {
      std::cerr << "regime: " << p.failure << "\n";
      return;
    }
    if (*json) return print_json(session::to_json(p));
    std::cout << session::to_text(p);
  });
}

}  // namespace regime::cli
