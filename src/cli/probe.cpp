// regime probe --device D [--seconds S] ... (--workload sim:NAME | -- CMD ARGS...): one short run,
// measured and classified; the trace, steps and a run record are saved (src/session/probe.hpp).
// Never changes a limit.
#include "session/probe.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "session/job_devices.hpp"

namespace regime::cli {

namespace {

void print_text(const session::ProbeReport& p) {
  const RunRecord& rec = p.record;
  const nlohmann::json& run = p.run;
  std::cout << format_report(*p.report);
  std::string status;
  if (p.is_command && rec.exit_status)
    status =
        fmt::format(", exit status {}{}", *rec.exit_status,
                    run["stopped_at_time_limit"].get<bool>() ? " (stopped at the time limit)" : "");
  std::cout << fmt::format("run {}: {} on {} ({}), {:.1f} s{}, {} samples, {} step markers{}\n",
                           rec.id, rec.workload, rec.device, rec.gpu_name,
                           run["duration_s"].get<double>(), p.simulated ? " simulated" : "",
                           run["samples"].get<size_t>(), run["step_markers"].get<size_t>(), status);
  if (!p.simulated)
    std::cout << fmt::format("  regime's own CPU: {:.2f}% of one core\n",
                             run["sampler_cpu_pct"].get<double>());
  if (run["read_retries"].get<long>() > 0 || run["failed_reads"].get<long>() > 0)
    std::cout << fmt::format(
        "  device reads: {} retried after a transient error, {} given up (field left empty)\n",
        run["read_retries"].get<long>(), run["failed_reads"].get<long>());
  std::cout << fmt::format("  trace {}\n  steps {}\n  saved as run {} in {}\n", rec.trace_path,
                           rec.steps_path, rec.id, run["db"].get<std::string>());
}

// One line per GPU, then the job's figures and how the GPUs differ.
void print_job(const session::JobProbeReport& p) {
  for (const auto& g : p.gpus) {
    const RunRecord& rec = g.record;
    if (!g.report) {
      std::cout << fmt::format("{} ({}): {}\n", rec.device, rec.gpu_name, g.failure);
      continue;
    }
    const Measurement& m = g.report->measurement;
    std::cout << fmt::format(
        "{} ({}): {} (confidence {:.2f}), {:.1f} W mean, {:.2f} J/{}, run {}\n  trace {}\n",
        rec.device, rec.gpu_name, to_string(g.report->regime), g.report->confidence, m.avg_power_W,
        m.energy_per_step_J, m.per_second ? "s" : "step", rec.id, rec.trace_path);
  }
  if (p.job) {
    const Measurement& j = *p.job;
    std::cout << fmt::format(
        "job on {} GPUs: {}; time per {} {:.4f} s [{:.4f}, {:.4f}], energy per {} {:.2f} J "
        "[{:.2f}, {:.2f}] (summed over GPUs), {} steps\n",
        p.gpus.size(), to_string(*p.job_regime), j.per_second ? "second" : "step",
        j.time_per_step_s, j.time_per_step_ci_s.first, j.time_per_step_ci_s.second,
        j.per_second ? "second" : "step", j.energy_per_step_J, j.energy_per_step_ci_J.first,
        j.energy_per_step_ci_J.second, j.steps);
    std::cout << fmt::format(
        "  spread between GPUs: energy per step {:.1f}%, mean power {:.1f} W (highest: {})\n",
        100 * p.spread->energy_rel, p.spread->power_W,
        p.gpus[static_cast<size_t>(p.spread->highest_gpu)].record.device);
  }
  if (p.usage.is_object())
    std::cout << fmt::format("  the job's GPUs (CUDA_VISIBLE_DEVICES {}): {}{}\n",
                             p.usage["cuda_visible_devices"].is_null()
                                 ? std::string("unset")
                                 : p.usage["cuda_visible_devices"].get<std::string>(),
                             p.usage["job_gpus"].dump(),
                             p.usage["match"].get<bool>() ? ", as measured" : "");
}

}  // namespace

void add_probe(CLI::App& root, Context& ctx) {
  auto r = std::make_shared<session::ProbeRequest>();
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto* sub = root.add_subcommand(
      "probe",
      "Run a workload briefly while sampling the GPU; measure time and energy per step and name "
      "the regime. Never changes a power limit.");
  sub->add_option(
         "--device", r->device,
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
                  "Seconds between reads of the energy counter (also read at every window "
                  "edge); each read costs milliseconds on some GPUs")
      ->capture_default_str()
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
  sub->add_option("--db", r->db, "Run database (default: STATE_DIR/runs.sqlite)");
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
  sub->callback([r, json, quiet, &ctx] {
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
      if (*json)
        print_json(session::to_json(jp));
      else
        print_job(jp);
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
    if (*json)
      print_json(session::to_json(p));
    else
      print_text(p);
  });
}

}  // namespace regime::cli
