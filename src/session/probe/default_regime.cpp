#include "session/probe/default_regime.hpp"

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "analysis/probe_regime.hpp"
#include "session/probe/probe_window.hpp"

namespace regime::session {

namespace {

// A job of phases: each GPU named as a probe names it (analysis/probe_regime.hpp) over the
// default's window of whole cycles, by the phase holding most of its energy.
std::optional<Regime> phased_regime(const std::vector<GpuInfo>& infos, const LiveProber& prober,
                                    const Measurement& m) {
  MeasureOptions opts;
  opts.detect_steady_state = false;  // the window starts where a cycle does
  std::vector<Regime> regimes;
  for (size_t i = 0; i < prober.gpu_count(); ++i) {
    const RegimeOrWhy named = name_probe_regime(prober.trace(i), infos.at(i), opts,
                                                whole_cycles(m.window_start_s, m.window_end_s));
    if (!named.report) return std::nullopt;
    regimes.push_back(named.report->regime);
  }
  return job_regime(regimes);
}

}  // namespace

// The default's regime: each GPU classified on its own figures there (the first probe, at the
// highest cap), the most constrained one the job's (analysis/data_parallel.hpp); on a job of
// phases the phase-aware regime, as probe and study name it.
std::function<std::optional<Regime>(const Measurement&)> classify_at_default(
    const std::vector<GpuInfo>& infos, const LiveProber* prober) {
  return [infos, prober](const Measurement& m) -> std::optional<Regime> {
    if (prober && prober->cycle_s())
      if (std::optional<Regime> r = phased_regime(infos, *prober, m)) return r;
    std::vector<Measurement> at_default{m};
    if (prober && !prober->per_gpu().empty()) at_default = prober->per_gpu().rbegin()->second;
    std::vector<Regime> regimes;
    for (size_t i = 0; i < at_default.size(); ++i)
      regimes.push_back(classify(at_default[i], infos.at(i)).regime);
    return job_regime(regimes);
  };
}

}  // namespace regime::session
