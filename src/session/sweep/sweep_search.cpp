#include "session/sweep/sweep_search.hpp"

#include <map>

#include "analysis/data_parallel.hpp"
#include "session/probe/default_regime.hpp"

namespace regime::session {

namespace {

// Each GPU's figures at each cap, for a job's report.
nlohmann::json per_gpu_json(const std::map<double, std::vector<Measurement>>& by_cap,
                            const std::vector<std::string>& devices) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [cap, ms] : by_cap) {
    GpuSpread sp = gpu_spread(ms);
    nlohmann::json g = nlohmann::json::array();
    for (size_t i = 0; i < ms.size(); ++i)
      g.push_back({{"device", devices.at(i)},
                   {"energy_per_step_J", ms[i].energy_per_step_J},
                   {"avg_power_W", ms[i].avg_power_W},
                   {"time_per_step_s", ms[i].time_per_step_s}});
    out.push_back({{"cap_W", cap},
                   {"gpus", g},
                   {"energy_spread_pct", 100 * sp.energy_rel},
                   {"power_spread_W", sp.power_W}});
  }
  return out;
}

}  // namespace

void search_live(SweepReport& rep, const std::vector<GpuInfo>& infos, plan::SearchOptions opt,
                 RunLoop& loop, Workload& work, std::function<void(double)> set_all,
                 const ProbeBudget& budget) {
  LiveProber prober(loop, work, std::move(set_all), budget);
  opt.classify = classify_at_default(infos, &prober);
  rep.outcome = plan::search(prober, opt);
  if (plan::any_per_second(rep.outcome.probes)) rep.unit = "second";
  rep.cycle_s = prober.cycle_s();
  if (!rep.job_devices.empty()) rep.per_gpu = per_gpu_json(prober.per_gpu(), rep.job_devices);
}

}  // namespace regime::session
