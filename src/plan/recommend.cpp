#include "plan/recommend.hpp"

#include <fmt/core.h>

#include <map>
#include <set>
#include <utility>

#include "analysis/sweep_rows.hpp"

namespace regime::plan {

std::vector<ProbeResult> probes_from_rows(const std::vector<SweepRow>& rows) {
  std::vector<ProbeResult> probes;
  for (const auto& r : rows) probes.push_back({r.cap_W, to_measurement(r), ""});
  return by_cap_desc(std::move(probes));
}

NoisePriors table_priors(const SweepTable& table, const std::string& gpu) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<SweepRow>> by_workload;
  for (const auto& r : table.rows) {
    if (r.gpu != gpu) continue;
    if (!by_workload.count(r.workload)) order.push_back(r.workload);
    by_workload[r.workload].push_back(r);
  }
  std::vector<std::vector<ProbeResult>> workloads;
  for (const auto& w : order) workloads.push_back(probes_from_rows(by_workload[w]));
  const std::string name = table.source.empty() ? std::string("the table") : table.source;
  return table_noise_priors(workloads, fmt::format("{} ({})", name, gpu));
}

std::vector<Recommendation> recommend(const SweepTable& table, const Objective& objective) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& r : table.rows)
    if (seen.insert({r.workload, r.gpu}).second) pairs.emplace_back(r.workload, r.gpu);
  std::map<std::string, NoisePriors> priors;
  for (const auto& [workload, gpu] : pairs)
    if (!priors.count(gpu)) priors[gpu] = table_priors(table, gpu);
  std::vector<Recommendation> out;
  for (const auto& [workload, gpu] : pairs) {
    std::vector<SweepRow> rows;
    for (const auto& r : table.rows)
      if (r.workload == workload && r.gpu == gpu) rows.push_back(r);
    auto probes = probes_from_rows(rows);
    DecisionInputs in;
    in.objective = objective;
    in.default_limit_W = default_limit_W(rows);
    in.max_power_W = probes.front().cap_W;
    in.priors = priors[gpu];
    out.push_back({workload, gpu, decide(probes, in)});
  }
  return out;
}

Recommendation recommend_kept(const SweepTable& table, const Objective& objective,
                              const std::optional<Measurement>& default_again) {
  std::vector<Recommendation> recs = recommend(table, objective);
  if (recs.size() != 1 || !default_again) return recs.front();
  auto probes = probes_from_rows(table.rows);
  DecisionInputs in;
  in.objective = objective;
  in.default_limit_W = default_limit_W(table.rows);
  in.max_power_W = probes.front().cap_W;
  in.default_again = default_again;
  recs.front().decision = decide(probes, in);
  return recs.front();
}

}  // namespace regime::plan
