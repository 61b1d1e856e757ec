// regime study --device D (--workload sim:NAME | -- CMD...) [--objective O]
//   [--strategy adaptive|exhaustive] [--probe-seconds S] [--actuate] [--apply] [--json] [--out DIR]
// The main job: probe, classify, sweep what the regime warrants, decide (src/session/study.hpp).
#include "session/study.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "common/error.hpp"
#include "session/report.hpp"

namespace regime::cli {

namespace fs = std::filesystem;

namespace {

std::string ci_text(double v, const Interval& ci, int digits) {
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", v, digits, ci.first, digits, ci.second, digits);
}

// The gated controller: why it stayed out, or its evaluation against no control.
void print_control(const session::StudyControl& c) {
  std::cout << "\ncontrol (regime-gated, thermal inside): ";
  if (!c.run) {
    std::cout << (c.skipped.empty() ? "not engaged: " + c.reason
                                    : c.reason + "; not evaluated: " + c.skipped)
              << "\n";
    return;
  }
  const session::ControlReport& cr = *c.run;
  std::cout << (cr.engaged ? "engaged: " : "not engaged: ") << cr.reason << "\n";
  if (!cr.evaluation) {
    std::cout << "   evaluated by: " << c.command << "\n";
    return;
  }
  const session::Evaluation& ev = *cr.evaluation;
  std::cout << fmt::format(
      "   {} interleaved windows of {:.0f} s on one run ({:.0f} s), baseline first and last; "
      "{} limit change(s)\n",
      ev.windows.size(), ev.window_s, cr.duration_s, cr.actions.size());
  for (const auto* arm : {&ev.baseline, &ev.controlled})
    std::cout << fmt::format("   {:<11} energy per step {} J, time per step {} s\n",
                             arm == &ev.baseline ? "baseline:" : "controlled:",
                             ci_text(arm->energy_per_step_J, arm->energy_per_step_ci_J, 3),
                             ci_text(arm->time_per_step_s, arm->time_per_step_ci_s, 4));
  std::cout << fmt::format(
      "   change: energy per step {:+.1f}% [{:+.1f}, {:+.1f}], time per step {:+.1f}% [{:+.1f}, "
      "{:+.1f}] (95% intervals)\n",
      ev.energy_change_pct, ev.energy_change_ci_pct.first, ev.energy_change_ci_pct.second,
      ev.time_change_pct, ev.time_change_ci_pct.first, ev.time_change_ci_pct.second);
  std::cout << "   verdict: " << to_string(ev.verdict) << "\n";
  std::cout << "   evaluated by: " << c.command << "\n";
}

void print_text(const session::StudyReport& r, const std::string& out_dir) {
  std::cout << fmt::format("study of {} on {} ({}), limit {:g} W (default {:g} W)\n\n", r.workload,
                           r.device, r.info.name, r.info.enforced_limit_W, r.info.default_limit_W);
  std::cout << "1. probe at the current limit (" << r.probe_seconds << " s):\n";
  if (!r.gpu_regimes.empty()) {
    // One job: each GPU's regime, then the most constrained GPU's report, which is the job's.
    std::cout << fmt::format("   one job on {} GPUs; each GPU on its own figures:\n",
                             r.gpu_regimes.size());
    for (size_t i = 0; i < r.gpu_regimes.size(); ++i) {
      const RegimeReport& g = r.gpu_regimes[i];
      std::cout << fmt::format("   {:<8} {} (confidence {:.2f}), {:.1f} W mean, {:.2f} J/step\n",
                               r.job_devices[i], to_string(g.regime), g.confidence,
                               g.measurement.avg_power_W, g.measurement.energy_per_step_J);
    }
    if (r.job_measurement)
      std::cout << fmt::format(
          "   the job: energy per step {:.2f} J [{:.2f}, {:.2f}] summed over its GPUs; the most "
          "constrained GPU's regime is the job's:\n",
          r.job_measurement->energy_per_step_J, r.job_measurement->energy_per_step_ci_J.first,
          r.job_measurement->energy_per_step_ci_J.second);
  }
  std::cout << format_report(r.regime) << "\n";
  if (!r.plan.sweep) {
    std::cout << "2. no sweep: " << r.plan.why << "\n";
  } else {
    std::cout << "2. sweep: " << r.plan.why << "\n";
    if (!r.sweep) {
      std::cout << "   not run: " << r.skipped << "\n";
    } else {
      const plan::SearchOutcome& o = r.sweep->outcome;
      std::cout << fmt::format("   strategy {}, objective {}, {} probe(s) of {} planned cap(s)\n",
                               plan::to_string(r.sweep->strategy), r.sweep->objective.text(),
                               o.probes.size(), r.plan.caps.size());
      std::cout << session::results_text(*r.sweep);
      std::cout << "   search: " << o.stop_reason << "\n\n";
      std::cout << "3. " << session::decision_text(*r.sweep) << "\n";
      std::cout << "4. " << r.sweep->after << "\n";
    }
  }
  print_control(r.control);
  if (!out_dir.empty())
    std::cout << fmt::format("\nwrote {}/probe.trace.csv, probe.steps.csv and study.json\n",
                             out_dir);
}

}  // namespace

void add_study(CLI::App& root, Context&) {
  auto r = std::make_shared<session::StudyRequest>();
  auto device = std::make_shared<std::string>();
  auto settings = std::make_shared<session::SweepSettingsText>();
  auto json = std::make_shared<bool>(false);
  auto report_path = std::make_shared<std::string>();
  auto* sub = root.add_subcommand(
      "study",
      "The main job: probe a GPU + workload pair, name its regime, sweep power caps if the "
      "regime warrants it, decide and report. A real GPU is changed only with --actuate.");
  sub->add_option("--device", *device,
                  "nvml:N or sim:MODEL; one job's GPUs (nvml:0,1, nvml:all, nvml:job) are studied "
                  "as one job; a list of sim: devices (sim:t4,sim:gv100,sim:l4) each in turn, in "
                  "one table")
      ->required();
  auto* workload =
      sub->add_option("--workload", r->workload.builtin, "Built-in workload, e.g. sim:resnet50");
  auto* command = sub->add_option("command", r->workload.command, "The workload command, after --");
  workload->excludes(command);
  add_sweep_settings(sub, r->settings, *settings, r->workload);
  sub->add_option("--probe-seconds", r->probe_seconds,
                  "Length of the probe at the current limit, s (simulated s on sim:)")
      ->capture_default_str()
      ->check(number_in(0, 86400, true));
  sub->add_option("--max-probe-seconds", r->max_probe_seconds,
                  "A card still heating is watched on, up to this long, until its temperature is "
                  "flat (then the last --probe-seconds are classified)")
      ->capture_default_str()
      ->check(number_in(0, 86400, true));
  sub->add_flag("--actuate", r->actuate, "Allow changing the limit of a real (NVML) GPU");
  sub->add_option("--control-seconds", r->control_seconds,
                  "Length of the gated controller's evaluation on a thermal-bound pair, s "
                  "(default: enough windows for the card's thermal time constant)")
      ->check(number_in(0, 86400, true));
  sub->add_flag(
      "--no-control", [r](std::int64_t) { r->control = false; },
      "Do not evaluate the gated controller on a thermal-bound pair");
  sub->add_flag("--json", *json,
                "Machine-readable output: stdout carries only the JSON object; a command's own "
                "stdout goes to stderr");
  sub->add_option("--out", r->out_dir, "Folder for the probe trace and study.json");
  sub->add_option("--report", *report_path,
                  "Also write the study as one HTML page (docs/report.md): the probe's "
                  "timeline, the regime, energy and time per step against the cap");
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet,
                "Nothing on stderr while it runs: no progress line and no line per cap (the "
                "result is printed as usual; errors and warnings still go to stderr)");
  sub->callback([r, device, settings, json, report_path, quiet] {
    r->device = session::parse_device_set(*device);
    r->settings = session::parse_sweep_settings(*settings, r->settings);
    r->workload.stdout_to_stderr = *json;  // stdout carries only the JSON
    TaskProgressLine progress(stderr, progress_wanted(stderr, *quiet), "study");
    attach_progress(r->settings, progress, !*json && !*quiet);
    if (session::studied_in_turn(r->device)) {
      // Several GPUs studied in turn, then one table of them all.
      if (!report_path->empty())
        throw Error(ErrorKind::InvalidArgument, "--report takes one device: study them one by one");
      std::vector<session::StudyReport> reps = session::run_studies(*r);
      progress.stop();
      std::vector<session::StudyRow> rows;
      nlohmann::json all = nlohmann::json::array();
      for (const auto& rep : reps) {
        print_warnings(rep.warnings);
        rows.push_back(session::study_row(rep));
        nlohmann::json j = rep.json;
        j["basis"] = rows.back().basis;
        all.push_back(j);
      }
      if (*json)
        print_json(all);
      else
        std::cout << session::format_study_table(rows);
      return;
    }
    session::StudyReport rep = session::run_study(*r);
    progress.stop();
    print_warnings(rep.warnings);
    if (!report_path->empty()) {
      const std::string trace =
          r->out_dir.empty() ? "" : (fs::path(r->out_dir) / "probe.trace.csv").string();
      const session::ReportResult page = session::write_study_report(rep, *report_path, trace);
      std::cerr << fmt::format("regime: wrote {} ({:.1f} KiB)\n", page.out.string(),
                               double(page.bytes) / 1024.0);
    }
    if (*json)
      print_json(rep.json);
    else
      print_text(rep, r->out_dir);
  });
}

}  // namespace regime::cli
