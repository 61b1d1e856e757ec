// regime report (RUN_ID | sweep:ID | study:ID [--study-out DIR] | control:ID [--gpu G] |
//   [--gpu G] [--workload W])
// -o report.html: one run drawn as a self-contained HTML page (docs/report.md).
#include "session/results/report.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/run_options.hpp"

namespace regime::cli {

void add_report(CLI::App& root, Context&) {
  auto* sub = root.add_subcommand(
      "report", "Draw a run (timeline, regime, energy per step, other GPUs) as one HTML file");
  struct ReportArgs {
    std::string run;
    std::string db;
    std::string gpu;
    std::string workload;
    std::string out;
    std::string study_out;
    size_t columns = 1200;
    bool json = false;
  };
  auto a = std::make_shared<ReportArgs>();
  auto* id = sub->add_option("run_id", a->run,
                             "Run id in the store (regime probe prints it), sweep:ID (regime "
                             "sweep --json: stored_as), study:ID, or control:ID for a control run "
                             "(regime control --json: stored_as); `regime runs` lists them all");
  sub->add_option("--db", a->db, "Run database (default: STATE_DIR/runs.sqlite)");
  auto* gpu = sub->add_option("--gpu", a->gpu,
                              "Without a run id: the newest finished run on a GPU whose name, "
                              "UUID or device contains this; with control:ID, which of its GPUs "
                              "to draw (its device, e.g. nvml:1, or what one GPU's name or UUID "
                              "contains; default: the first)");
  auto* workload =
      sub->add_option("--workload", a->workload,
                      "Without a run id: the newest finished run whose workload contains this");
  workload->excludes(id);
  auto* study_out =
      sub->add_option("--study-out", a->study_out,
                      "With study:ID: the study's --out folder, where its probe traces are (for a "
                      "study kept before the store recorded it, or a folder since moved)");
  sub->add_option("-o,--output", a->out, "HTML file to write")->required();
  sub->add_option("--columns", a->columns,
                  "Pixel columns a timeline is reduced to (lowest and highest per column)")
      ->check(CLI::Range(10, 100000));
  sub->add_flag("--json", a->json, "Machine-readable summary");
  sub->callback([=] {
    session::ReportRequest req;
    if (id->count()) req.run = parse_run_ref(a->run);
    req.db = DatabaseLocation::from_text(a->db);
    if (gpu->count()) req.gpu = a->gpu;
    if (workload->count()) req.workload = a->workload;
    if (study_out->count()) req.study_out = a->study_out;
    req.out = a->out;
    req.columns = a->columns;
    const session::ReportResult r = session::write_report(req);
    if (a->json) {
      print_json({{"run_id", r.run_id},
                  {"run", r.run},
                  {"output", r.out.string()},
                  {"bytes", r.bytes},
                  {"chart_library", r.chart_library.string()},
                  {"comparison_runs", r.comparison_runs},
                  {"timeline_points", r.timeline_points},
                  {"trace_points", r.trace_points},
                  {"sweep_caps", r.sweep_caps}});
      return;
    }
    const std::string drawn = r.trace_points ? fmt::format("{} of {} trace points drawn",
                                                           r.timeline_points, r.trace_points)
                                             : std::string("no trace to draw");
    const std::string caps = r.sweep_caps ? fmt::format(", {} cap(s) swept", r.sweep_caps) : "";
    std::cout << fmt::format("wrote {} ({:.1f} KiB): run {}, {}{}, {} run(s) compared\n",
                             r.out.string(), double(r.bytes) / 1024.0, r.run, drawn, caps,
                             r.comparison_runs);
  });
}

}  // namespace regime::cli
