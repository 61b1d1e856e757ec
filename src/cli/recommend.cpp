// regime recommend --sweep FILE [--objective O] [--json]: the decision for every workload of a
// sweep table, by the same rule `regime sweep` applies to its own measurements.
#include "plan/recommend.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "plan/render.hpp"

namespace regime::cli {

namespace {

struct RecommendArgs {
  std::string sweep_file;
  std::string objective = "energy";
  bool json = false;
};

void run_recommend(const RecommendArgs& a) {
  plan::Objective objective = plan::parse_objective(a.objective);
  SweepTable table = read_sweep_table(a.sweep_file);
  auto recs = plan::recommend(table, objective);
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : recs)
      list.push_back({{"workload", r.workload}, {"gpu", r.gpu}, {"decision", to_json(r.decision)}});
    print_json({{"workloads", list}});
    return;
  }
  std::cout << fmt::format("{}: {} workload(s), objective {}\n", a.sweep_file, recs.size(),
                           objective.text());
  std::cout << fmt::format("{:<48} {:<8} {:>8} {:>9} {:>9}  {}\n", "workload", "gpu", "cap W",
                           "dE %", "dT %", "decision");
  for (const auto& r : recs) {
    const auto& d = r.decision;
    std::cout << fmt::format("{:<48} {:<8} {:>8.1f} {:>+9.1f} {:>+9.1f}  {}\n", r.workload, r.gpu,
                             d.cap_W, d.energy_change_pct, d.time_change_pct,
                             d.keep_default ? "keep default" : "cap");
  }
  std::cout << "(dE, dT: energy and time per unit of work against the default limit, the highest "
               "cap of each workload; --json gives each decision's reason)\n";
}

}  // namespace

void add_recommend(CLI::App& root, Context&) {
  auto* sub =
      root.add_subcommand("recommend", "Decide the cap for every workload of a sweep table");
  auto a = std::make_shared<RecommendArgs>();
  sub->add_option("--sweep", a->sweep_file,
                  "Sweep table CSV (workload,gpu,cap_W,time_s,avg_power_W,unit)")
      ->required();
  sub->add_option("--objective", a->objective,
                  "energy | edp | zeus:ETA | max-slowdown:PCT (default energy)");
  sub->add_flag("--json", a->json, "Machine-readable output");
  sub->callback([a] { run_recommend(*a); });
}

}  // namespace regime::cli
