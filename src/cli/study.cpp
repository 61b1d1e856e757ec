// regime study --device D (--workload sim:NAME | -- CMD...) [--objective O]
//   [--strategy adaptive|exhaustive] [--probe-seconds S] [--actuate] [--apply] [--json] [--out DIR]
// The main job: probe, classify, sweep what the regime warrants, decide
// (src/session/study/study.hpp).
#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/job_options.hpp"
#include "cli/progress.hpp"
#include "cli/sweep_options.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "session/results/report.hpp"
#include "session/scheduler/job.hpp"
#include "session/study/study_kept.hpp"
#include "session/study/study_view.hpp"

namespace regime::cli {

namespace fs = std::filesystem;

namespace {

// What to study: a built-in workload, a command after --, or a process already running.
void add_study_workload(CLI::App* sub, session::StudyRequest& r) {
  auto* workload =
      sub->add_option("--workload", r.workload.builtin, "Built-in workload, e.g. sim:resnet50");
  auto* command = sub->add_option("command", r.workload.command, "The workload command, after --");
  workload->excludes(command);
  auto* attach = sub->add_option(
      "--attach", r.workload.attach_pid,
      "Study a process already running (a training script's regime_step.PowerLimitOptimizer "
      "starts this): its step markers arrive at --step-socket, and its work ends when it sends "
      "\"end\" there or exits");
  attach->check(number_in(2, 4194304));
  attach->excludes(workload)->excludes(command);
  sub->add_option("--step-socket", r.workload.attach_socket,
                  "With --attach: the Unix datagram socket to make for the process's step "
                  "markers (an absolute path)")
      ->needs(attach);
  sub->add_option("--workload-name", r.workload.name,
                  "The name the study's decision is kept under in the run store (default: the "
                  "workload as given), so that a later run of the same workload finds it (--auto)");
}

// --auto: the decision kept for the workload's name on the GPU's model, read back as the
// scheduler's `job begin --power auto` reads it (its newest kept sweep, checked whole); none
// when nothing usable is kept.
session::KeptLookup kept_lookup(const DatabaseLocation& db) {
  return
      [db](const GpuInfo& gpu, const std::string& workload) -> std::optional<session::KeptChoice> {
        RunStore runs(db);
        std::vector<SweepRecord> sweeps;
        if (auto s = runs.newest_sweep_of(gpu.name, workload)) sweeps.push_back(std::move(*s));
        const session::CapChoice c =
            session::choose_cap(parse_power_policy("auto"), gpu, sweeps, workload);
        if (!c.sweep_id || !c.skipped.empty()) return std::nullopt;
        return session::KeptChoice{c.cap_W, c.sweep_id, c.why};
      };
}

// The study's page (--report), written before the study is printed, whatever happens to it:
// nothing measured is lost.
void write_study_page(const session::StudyReport& rep, const DatabaseLocation& db,
                      const std::string& page_path, const std::string& out_dir, Context& ctx) {
  try {
    const session::ReportResult page = session::write_study_report(rep, db, page_path, out_dir);
    std::cerr << fmt::format("regime: wrote {} ({:.1f} KiB)\n", page.out.string(),
                             double(page.bytes) / 1024.0);
  } catch (const Error& e) {
    std::cerr << "regime: --report: " << e.what() << "\n";
    ctx.exit_status = exit_code(e.kind());
  }
}

// The page's place, checked before the study runs, as every output file is.
void check_report_file(const std::string& page_path) {
  try {
    check_output_file(page_path);
  } catch (const Error& e) {
    throw Error(e.kind(), "--report: " + std::string(e.what()));
  }
}

// Several GPUs studied in turn: a page each, FILE's name with the device's before its extension
// (study.html -> study-sim_t4.html), as their --out folders are named.
std::vector<std::string> pages_in_turn(const std::string& report_path,
                                       const std::vector<std::string>& names) {
  std::vector<std::string> pages;
  if (report_path.empty()) return pages;
  const fs::path p(report_path);
  for (const std::string& name : names)
    pages.push_back(
        (p.parent_path() / (p.stem().string() + "-" + name + p.extension().string())).string());
  return pages;
}

// Several GPUs studied in turn, then one table of them all.
void print_studies(const std::vector<session::StudyReport>& reps, bool json, Context& ctx) {
  for (const auto& rep : reps) print_warnings(rep.warnings);
  if (json)
    print_json(session::to_json(reps));
  else
    std::cout << session::to_text(reps);
  for (const auto& rep : reps)
    if (rep.store_failure)
      ctx.exit_status = report_store_failure(session::store_failure_text(*rep.store_failure));
}

void print_study(const session::StudyReport& rep, const session::StudyRequest& r, bool json,
                 const std::string& report_path, Context& ctx) {
  print_warnings(rep.warnings);
  if (!report_path.empty()) write_study_page(rep, r.settings.db, report_path, r.out_dir, ctx);
  if (json)
    print_json(rep.json);
  else
    std::cout << (rep.kept ? session::kept_text(rep) : session::to_text(rep, r));
  if (rep.exit_status) ctx.exit_status = *rep.exit_status;  // the command's, run to its end
  // Only after the results are out: a store that failed still fails the command.
  if (rep.store_failure)
    ctx.exit_status = report_store_failure(session::store_failure_text(*rep.store_failure));
}

}  // namespace

void add_study(CLI::App& root, Context& ctx) {
  auto r = std::make_shared<session::StudyRequest>();
  auto device = std::make_shared<std::string>();
  auto settings = std::make_shared<SweepSettingsText>();
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
  add_study_workload(sub, *r);
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
  sub->add_flag("--stop-after-decision", r->stop_after_decision,
                "Stop the command once the study has decided (a characterization run); by "
                "default the command runs to its end under the decision and the study exits "
                "with its status");
  auto use_kept = std::make_shared<bool>(false);
  sub->add_flag("--auto", *use_kept,
                "Train at the decision kept for --workload-name on this GPU model, when one is "
                "kept, without probing or searching; else study as usual and keep the decision "
                "under that name for the next run")
      ->needs("--workload-name");
  sub->add_flag("--json", *json,
                "Machine-readable output: stdout carries only the JSON object; a command's own "
                "stdout goes to stderr");
  sub->add_option("--out", r->out_dir, "Folder for the probe trace and study.json");
  sub->add_option("--report", *report_path,
                  "Also write the study as one HTML page (docs/report.md): the probe's "
                  "timeline, the regime, energy and time per step against the cap (GPUs studied "
                  "in turn: a page each, FILE's name with the device's, study-sim_t4.html)");
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet,
                "Nothing on stderr while it runs: no progress line and no line per cap (the "
                "result is printed as usual; errors and warnings still go to stderr)");
  sub->callback([r, device, settings, json, report_path, quiet, use_kept, &ctx] {
    r->device = parse_device_set(*device);
    r->settings = parse_sweep_settings(*settings, r->settings);
    if (*use_kept) r->kept = kept_lookup(r->settings.db);
    r->workload.stdout_to_stderr = *json;  // stdout carries only the JSON
    TaskProgressLine progress(stderr, progress_wanted(stderr, *quiet), "study");
    attach_progress(r->settings, progress, !*json && !*quiet);
    if (session::studied_in_turn(r->device)) {
      const std::vector<std::string> names = session::device_file_names(r->device);
      const std::vector<std::string> pages = pages_in_turn(*report_path, names);
      for (const std::string& page : pages) check_report_file(page);
      const std::vector<session::StudyReport> reps = session::run_studies(*r);
      progress.stop();
      for (size_t i = 0; i < pages.size() && i < reps.size(); ++i)
        write_study_page(reps[i], r->settings.db, pages[i],
                         r->out_dir.empty() ? "" : (fs::path(r->out_dir) / names[i]).string(), ctx);
      return print_studies(reps, *json, ctx);
    }
    if (!report_path->empty()) check_report_file(*report_path);
    const session::StudyReport rep = session::run_study(*r);
    progress.stop();
    print_study(rep, *r, *json, *report_path, ctx);
  });
}

}  // namespace regime::cli
