#include "report/sweep.hpp"

#include <cmath>
#include <map>

namespace regime::report {

nlohmann::json sweep_section(const std::vector<plan::ProbeResult>& probes,
                             const plan::Decision& decision, const plan::DecisionView& view) {
  // Keyed by the cap to 0.1 W, as the decision rule matches caps (find_probe).
  std::map<long long, const plan::ProbeResult*> by_cap;
  for (const plan::ProbeResult& p : probes) by_cap[std::llround(p.cap_W * 10)] = &p;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [key, p] : by_cap) {
    const Measurement& m = p->measurement;
    points.push_back(
        {{"cap_W", p->cap_W},
         {"energy_per_step_J", m.energy_per_step_J},
         {"energy_per_step_ci_J", {m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second}},
         {"time_per_step_s", m.time_per_step_s},
         {"time_per_step_ci_s", {m.time_per_step_ci_s.first, m.time_per_step_ci_s.second}},
         {"steps", m.steps},
         {"avg_power_W", m.avg_power_W}});
  }
  return {{"unit", view.unit},
          {"default_limit_W", view.default_limit_W},
          {"probes", probes.size()},
          {"points", points},
          {"decision", plan::decision_json(decision, view)}};
}

}  // namespace regime::report
