// regime recommend (--sweep FILE | --run sweep:ID [--db FILE]) [--objective O] [--json]: the
// decision for every workload of a sweep table, or of a sweep kept in the run database, by the
// same rule `regime sweep` applies to its own measurements.
#include "session/results/recommend.hpp"

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/run_options.hpp"
#include "session/results/recommend_view.hpp"

namespace regime::cli {

namespace {

struct RecommendArgs {
  session::RecommendRequest request;
  std::string run;  // --run as written
  std::string db;   // --db as written: read with --run only
  std::string objective = plan::kDefaultObjective;
  bool json = false;
};

void run_recommend(RecommendArgs& a) {
  a.request.objective = plan::parse_objective(a.objective);
  if (!a.run.empty()) {
    a.request.run = parse_run_ref(a.run);
    a.request.db = DatabaseLocation::from_text(a.db);
  }
  const session::RecommendReport report = session::recommend(a.request);
  if (a.json) return print_json(session::to_json(report));
  std::cout << session::to_text(report);
}

}  // namespace

void add_recommend(CLI::App& root, Context&) {
  auto* sub =
      root.add_subcommand("recommend", "Decide the cap for every workload of a sweep table");
  auto a = std::make_shared<RecommendArgs>();
  auto* sweep = sub->add_option("--sweep", a->request.sweep_file,
                                "Sweep table CSV (workload,gpu,cap_W,time_s,avg_power_W,unit)");
  auto* run = sub->add_option("--run", a->run,
                              "A sweep kept in the run database, sweep:ID (`regime runs` lists "
                              "them): decided again without running it again");
  sweep->excludes(run);
  sub->add_option("--db", a->db, "Run database for --run (default: STATE_DIR/runs.sqlite)");
  sub->add_option("--objective", a->objective,
                  "max-slowdown:PCT | energy | edp | zeus:ETA (default max-slowdown:10: least "
                  "energy per unit at most 10% slower; --json shows the unconstrained optimum)");
  sub->add_flag("--json", a->json, "Machine-readable output");
  sub->callback([a] { run_recommend(*a); });
}

}  // namespace regime::cli
