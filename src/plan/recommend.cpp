#include "plan/recommend.hpp"

#include <set>
#include <utility>

#include "analysis/sweep_rows.hpp"
#include "plan/render.hpp"

namespace regime::plan {

std::vector<ProbeResult> probes_from_rows(const std::vector<SweepRow>& rows) {
  std::vector<ProbeResult> probes;
  for (const auto& r : rows) probes.push_back({r.cap_W, to_measurement(r)});
  return by_cap_desc(std::move(probes));
}

std::vector<Recommendation> recommend(const SweepTable& table, const Objective& objective) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& r : table.rows)
    if (seen.insert({r.workload, r.gpu}).second) pairs.emplace_back(r.workload, r.gpu);
  std::vector<Recommendation> out;
  for (const auto& [workload, gpu] : pairs) {
    std::vector<SweepRow> rows;
    for (const auto& r : table.rows)
      if (r.workload == workload && r.gpu == gpu) rows.push_back(r);
    auto probes = probes_from_rows(rows);
    DecisionInputs in;
    in.objective = objective;
    in.default_limit_W = probes.front().cap_W;
    in.max_power_W = probes.front().cap_W;
    out.push_back({workload, gpu, decide(probes, in)});
  }
  return out;
}

}  // namespace regime::plan
