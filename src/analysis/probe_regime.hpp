#pragma once
// The one rule by which a probe at the current limit names a GPU's regime, whichever command
// probes (probe, study, control's gate, a scheduler job's study): the trace measured over the
// probe's window, no regime at all when too little was measured (why instead, rather than a guess
// from a few samples), else the regime classified, and for a run of phases the regime of the
// phase kind that holds most of its energy (phases.hpp), since that is where a cap saves or costs
// the most.
#include <limits>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime {

// The part of a probe's trace its figures come from, on the trace's clock: all of it by default;
// a probe that ran on while the card heated is named from its last seconds.
struct ProbeWindow {
  double from_s = -std::numeric_limits<double>::infinity();
  double to_s = std::numeric_limits<double>::infinity();
};

// Throws the analysis's Error for a trace that cannot be measured at all (no samples, a window
// that ends before it starts).
RegimeOrWhy name_probe_regime(const Trace& trace, const GpuInfo& gpu,
                              const MeasureOptions& options = {}, const ProbeWindow& window = {});

}  // namespace regime
