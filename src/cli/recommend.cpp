// regime recommend (--sweep FILE | --run sweep:ID [--db FILE]) [--objective O] [--json]: the
// decision for every workload of a sweep table, or of a sweep kept in the run database, by the
// same rule `regime sweep` applies to its own measurements.
#include "session/recommend.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"

namespace regime::cli {

namespace {

struct RecommendArgs {
  session::RecommendRequest request;
  bool json = false;
};

std::string ci_cell(const std::optional<std::pair<double, double>>& ci) {
  return ci ? fmt::format("[{:+.1f}, {:+.1f}]", ci->first, ci->second) : std::string("-");
}

void run_recommend(const RecommendArgs& a) {
  const session::RecommendReport report = session::recommend(a.request);
  if (a.json) return print_json(to_json(report));
  std::cout << fmt::format("{}: {} workload(s), objective {}\n", report.source,
                           report.decided.size(), report.objective);
  std::cout << fmt::format("{:<48} {:<8} {:>8} {:>9} {:>16} {:>9} {:>16}  {}\n", "workload", "gpu",
                           "cap W", "dE %", "dE 95%", "dT %", "dT 95%", "decision");
  std::vector<std::string> notes;
  for (const auto& t : report.decided) {
    const auto& v = t.view;
    std::cout << fmt::format("{:<48} {:<8} {:>8.1f} {:>+9.1f} {:>16} {:>+9.1f} {:>16}  {}\n",
                             t.recommendation.workload, t.recommendation.gpu, v.cap_W,
                             v.energy_change_pct, ci_cell(v.energy_change_ci_pct),
                             v.time_change_pct, ci_cell(v.time_change_ci_pct),
                             v.keep_default          ? "keep default"
                             : v.saving_beyond_noise ? "cap"
                                                     : "cap, within noise");
    if (!v.time_bound_text.empty())
      notes.push_back(fmt::format("{}: {}", t.recommendation.workload, v.time_bound_text));
  }
  for (const auto& n : notes) std::cout << "  " << n << "\n";
  std::cout << "(dE, dT: energy and time per unit of work against the default limit, the highest "
               "cap of each workload, with 95% intervals where the rows give them; \"within "
               "noise\": the best row, its saving not beyond the rows' noise; --json gives each "
               "decision's reason)\n";
}

}  // namespace

void add_recommend(CLI::App& root, Context&) {
  auto* sub =
      root.add_subcommand("recommend", "Decide the cap for every workload of a sweep table");
  auto a = std::make_shared<RecommendArgs>();
  auto* sweep = sub->add_option("--sweep", a->request.sweep_file,
                                "Sweep table CSV (workload,gpu,cap_W,time_s,avg_power_W,unit)");
  auto* run = sub->add_option("--run", a->request.run,
                              "A sweep kept in the run database, sweep:ID (`regime runs` lists "
                              "them): decided again without running it again");
  sweep->excludes(run);
  sub->add_option("--db", a->request.db, "Run database for --run (default: STATE_DIR/runs.sqlite)");
  sub->add_option("--objective", a->request.objective,
                  "max-slowdown:PCT | energy | edp | zeus:ETA (default max-slowdown:10: least "
                  "energy per unit at most 10% slower; --json shows the unconstrained optimum)");
  sub->add_flag("--json", a->json, "Machine-readable output");
  sub->callback([a] { run_recommend(*a); });
}

}  // namespace regime::cli
