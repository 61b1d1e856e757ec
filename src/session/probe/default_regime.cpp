#include "session/probe/default_regime.hpp"

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"

namespace regime::session {

// The default's regime: each GPU classified on its own figures there (the first probe, at the
// highest cap), the most constrained one the job's (analysis/data_parallel.hpp).
std::function<std::optional<Regime>(const Measurement&)> classify_at_default(
    const std::vector<GpuInfo>& infos, const LiveProber* prober) {
  return [infos, prober](const Measurement& m) -> std::optional<Regime> {
    std::vector<Measurement> at_default{m};
    if (prober && !prober->per_gpu().empty()) at_default = prober->per_gpu().rbegin()->second;
    std::vector<Regime> regimes;
    for (size_t i = 0; i < at_default.size(); ++i)
      regimes.push_back(classify(at_default[i], infos.at(i)).regime);
    return job_regime(regimes);
  };
}

}  // namespace regime::session
