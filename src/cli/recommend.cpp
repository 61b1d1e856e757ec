// regime recommend (--sweep FILE | --run sweep:ID [--db FILE]) [--objective O] [--json]: the
// decision for every workload of a sweep table, or of a sweep kept in the run database, by the
// same rule `regime sweep` applies to its own measurements.
#include "plan/recommend.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "common/error.hpp"
#include "plan/decision_view.hpp"
#include "session/runs.hpp"
#include "trace/sweep_table.hpp"

namespace regime::cli {

namespace {

struct RecommendArgs {
  std::string sweep_file;
  std::string run;
  std::string db;
  std::string objective = plan::kDefaultObjective;
  bool json = false;
};

std::string ci_cell(const std::optional<Interval>& ci) {
  return ci ? fmt::format("[{:+.1f}, {:+.1f}]", ci->first, ci->second) : std::string("-");
}

void run_recommend(const RecommendArgs& a) {
  plan::Objective objective = plan::parse_objective(a.objective);
  if (a.sweep_file.empty() == a.run.empty())
    throw Error(ErrorKind::InvalidArgument, "give --sweep FILE or --run sweep:ID");
  std::vector<session::TableDecision> decided;
  std::string source = a.sweep_file;
  if (!a.run.empty()) {
    session::RunRef ref = session::parse_run_ref(a.run);
    if (ref.kind != session::RunRef::Kind::Sweep)
      throw Error(ErrorKind::InvalidArgument,
                  "--run takes a kept sweep, sweep:ID (`regime runs` lists them)");
    session::Redecision r = session::decide_again(a.db, ref.id, objective);
    decided.push_back(r.decided);
    source = fmt::format("sweep:{} ({} on {}, first decided under objective {})", r.sweep.id,
                         r.sweep.workload, r.sweep.device, r.sweep.objective);
  } else {
    decided = session::decide_table(read_sweep_table(a.sweep_file), objective);
  }
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : decided)
      list.push_back({{"workload", t.recommendation.workload},
                      {"gpu", t.recommendation.gpu},
                      {"decision", plan::decision_json(t.recommendation.decision, t.view)}});
    print_json({{"workloads", list}});
    return;
  }
  std::cout << fmt::format("{}: {} workload(s), objective {}\n", source, decided.size(),
                           objective.text());
  std::cout << fmt::format("{:<48} {:<8} {:>8} {:>9} {:>16} {:>9} {:>16}  {}\n", "workload", "gpu",
                           "cap W", "dE %", "dE 95%", "dT %", "dT 95%", "decision");
  std::vector<std::string> notes;
  for (const auto& t : decided) {
    const plan::DecisionView& v = t.view;
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
  auto* sweep = sub->add_option("--sweep", a->sweep_file,
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
