// regime runs [list] [--gpu G] [--workload W] [--db FILE] [--limit N] [--json] |
// regime runs show ID|probe:ID|sweep:ID|study:ID|decision:ID|control:ID: what the run database
// holds (src/session/results/runs.hpp).
#include "session/results/runs.hpp"

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/run_options.hpp"
#include "session/results/runs_view.hpp"

namespace regime::cli {

void add_runs(CLI::App& root, Context&) {
  auto* runs = root.add_subcommand(
      "runs", "What the run database holds: probes, sweeps, studies, decisions, controller runs");
  auto db = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto limit = std::make_shared<size_t>(20);
  auto ref = std::make_shared<std::string>();
  auto filter = std::make_shared<session::RunsFilter>();
  runs->add_option("--db", *db, "Run database (default: STATE_DIR/runs.sqlite)");

  auto* list_cmd = runs->add_subcommand("list", "The newest results of each kind (the default)");
  for (CLI::App* app : {runs, list_cmd}) {
    app->add_option("--gpu", filter->gpu,
                    "Only results on this GPU: part of its name (H200), URI (nvml:1) or UUID");
    app->add_option("--workload", filter->workload,
                    "Only results of this workload: part of its name or command line");
  }
  list_cmd->add_option("--limit", *limit, "How many of each kind (0: all; default 20)")
      ->check(number_in(0, 1000000));
  auto* show_cmd = runs->add_subcommand("show", "One result in full");
  show_cmd
      ->add_option("run", *ref,
                   "ID or probe:ID (a probe), sweep:ID (a sweep or a study's), study:ID, "
                   "decision:ID, control:ID (a controller run)")
      ->required();
  for (CLI::App* app : {runs, list_cmd, show_cmd})
    app->add_flag("--json", *json, "Machine-readable output");
  runs->callback([=] {
    if (show_cmd->parsed()) {
      const session::RunRef run = parse_run_ref(*ref);
      const session::StoredResult found = session::show_run(DatabaseLocation::from_text(*db), run);
      if (*json) return print_json(session::to_json(found));
      std::cout << session::to_text(found);
      return;
    }
    const session::RunsListing listing =
        session::list_runs(DatabaseLocation::from_text(*db), *limit, *filter);
    if (*json) return print_json(session::to_json(listing, *filter));
    std::cout << session::to_text(listing, *filter);
  });
}

}  // namespace regime::cli
