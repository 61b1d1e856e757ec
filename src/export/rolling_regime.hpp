#pragma once
// The regime of the last few seconds of a GPU the exporter watches: the samples and driver power
// points of a sliding window, classified as `regime classify --no-steps` would classify a trace
// of that window (no steps: the exporter does not see the work, only the GPU).
//
// A job of phases (analysis/phases.hpp) is named by the phase kind holding most of its energy, as
// probe and classify name it. Its phases' shares swing with where a window starts and ends, so
// where the kept samples show a repeating cycle the window grows to whole cycles, at least two of
// them: a 16 s cycle under a 30 s window is classified over its last 32 s.
#include <optional>
#include <vector>

#include "analysis/measurement.hpp"
#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime::exporter {

inline constexpr double kDefaultRegimeWindow_s = 30;
// The samples kept to look for a cycle of phases: two cycles of up to a minute each. A window
// asked for longer keeps its own length.
inline constexpr double kPhaseHistory_s = 120;

// The window a cycle of phases wants: whole cycles, at least two and at least `window_s`, within
// the `available_s` of samples kept; `window_s` where no cycle was found.
double phased_window_s(double window_s, std::optional<double> cycle_s, double available_s);

class RollingRegime {
 public:
  explicit RollingRegime(double window_s = kDefaultRegimeWindow_s) : window_s_(window_s) {}
  // Adds one round of reads; drops what fell out of the kept history (the window, or
  // kPhaseHistory_s when longer). Samples must come in time order.
  void add(const Sample& sample, const std::vector<PowerPoint>& points);
  // The regime of the window (of whole cycles for a job of phases, with its phases listed),
  // nullopt while the window is too short to name one (under kMinWindow_s of samples).
  std::optional<RegimeReport> classify(const GpuInfo& info) const;
  void clear() { trace_ = {}; }
  // The samples kept: the window and the history searched for a cycle of phases.
  const Trace& history() const { return trace_; }
  double history_s() const { return window_s_ > kPhaseHistory_s ? window_s_ : kPhaseHistory_s; }

 private:
  double window_s_;
  Trace trace_;
};

}  // namespace regime::exporter
