#include "plan/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "plan/recommend.hpp"

namespace regime::plan {

namespace {

class RowProber : public Prober {
 public:
  explicit RowProber(const std::vector<ProbeResult>& rows) : rows_(rows) {}
  ProbeResult probe(double cap_W) override {
    return rows_.at(static_cast<size_t>(find_probe(rows_, cap_W)));
  }

 private:
  const std::vector<ProbeResult>& rows_;
};

double nearest_rank(const std::vector<double>& sorted, double q) {
  auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::max(1.0, std::ceil(q * n)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

}  // namespace

std::vector<WorkloadEvaluation> evaluate_strategy(
    const SweepTable& table, Strategy strategy, double noise_floor_rel,
    const std::function<CurveFitter(const std::string& gpu)>& fitter_for) {
  return evaluate_strategy(table, strategy, noise_floor_rel, fitter_for, SearchOptions{});
}

std::vector<WorkloadEvaluation> evaluate_strategy(
    const SweepTable& table, Strategy strategy, double noise_floor_rel,
    const std::function<CurveFitter(const std::string& gpu)>& fitter_for,
    const SearchOptions& settings) {
  std::vector<WorkloadEvaluation> out;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& r : table.rows)
    if (std::find(pairs.begin(), pairs.end(), std::make_pair(r.workload, r.gpu)) == pairs.end())
      pairs.emplace_back(r.workload, r.gpu);
  std::map<std::string, NoisePriors> priors;
  for (const auto& [workload, gpu] : pairs)
    if (!priors.count(gpu)) priors[gpu] = table_priors(table, gpu);
  for (const auto& [workload, gpu] : pairs) {
    std::vector<SweepRow> rows;
    for (const auto& r : table.rows)
      if (r.workload == workload && r.gpu == gpu) rows.push_back(r);
    auto all = probes_from_rows(rows);
    RowProber prober(all);
    SearchOptions opt;
    opt.second_probe_fraction = settings.second_probe_fraction;
    opt.headroom_margin = settings.headroom_margin;
    opt.min_probes_before_model_stop = settings.min_probes_before_model_stop;
    opt.strategy = strategy;
    for (const auto& p : all) opt.caps.push_back(p.cap_W);
    opt.decision.objective = parse_objective("energy");
    opt.decision.default_limit_W = all.front().cap_W;
    opt.decision.max_power_W = all.front().cap_W;
    opt.decision.noise_floor_rel = noise_floor_rel;
    opt.decision.priors = priors[gpu];
    if (fitter_for) opt.fitter = fitter_for(gpu);
    auto outcome = search(prober, opt);

    auto least = [](const std::vector<ProbeResult>& ps) {
      return *std::min_element(ps.begin(), ps.end(), [](const auto& a, const auto& b) {
        return a.measurement.energy_per_step_J < b.measurement.energy_per_step_J;
      });
    };
    WorkloadEvaluation e;
    e.workload = workload;
    e.gpu = gpu;
    e.probes = static_cast<int>(outcome.probes.size());
    e.chosen_cap_W = outcome.decision.cap_W;
    e.least_energy_cap_W = least(all).cap_W;
    e.best_probed_cap_W = least(outcome.probes).cap_W;
    double chosen_J =
        all[static_cast<size_t>(find_probe(all, e.chosen_cap_W))].measurement.energy_per_step_J;
    e.regret_pct = (chosen_J / least(all).measurement.energy_per_step_J - 1) * 100;
    e.gated = outcome.no_cap_binds;
    e.kept_default = outcome.decision.keep_default;
    e.beyond_noise = outcome.decision.beyond_noise;
    e.reason = outcome.decision.reason;
    out.push_back(e);
  }
  return out;
}

EvaluationSummary summarize(const std::vector<WorkloadEvaluation>& evals) {
  EvaluationSummary s;
  s.workloads = static_cast<int>(evals.size());
  if (evals.empty()) return s;
  std::vector<double> regrets;
  double probes = 0;
  for (const auto& e : evals) {
    regrets.push_back(e.regret_pct);
    probes += e.probes;
  }
  std::sort(regrets.begin(), regrets.end());
  s.mean_probes = probes / static_cast<double>(evals.size());
  s.regret_p50_pct = nearest_rank(regrets, 0.5);
  s.regret_p90_pct = nearest_rank(regrets, 0.9);
  s.regret_max_pct = regrets.back();
  return s;
}

}  // namespace regime::plan
