#include "analysis/probe_regime.hpp"

#include <cmath>
#include <utility>

#include "analysis/phases.hpp"

namespace regime {

RegimeOrWhy name_probe_regime(const Trace& trace, const GpuInfo& gpu, const MeasureOptions& options,
                              const ProbeWindow& window) {
  const bool whole = !std::isfinite(window.from_s) && !std::isfinite(window.to_s);
  const Measurement m =
      whole ? measure(trace, options) : measure_window(trace, window.from_s, window.to_s, options);
  RegimeOrWhy named = classify_if_long_enough(m, gpu);
  if (named.report) named.report = with_phases(trace, std::move(*named.report), gpu, options);
  return named;
}

}  // namespace regime
