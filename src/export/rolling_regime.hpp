#pragma once
// The regime of the last few seconds of a GPU the exporter watches: the samples and driver power
// points of a sliding window, classified as `regime classify --no-steps` would classify a trace
// of that window (no steps: the exporter does not see the work, only the GPU).
#include <optional>
#include <vector>

#include "analysis/measurement.hpp"
#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime::exporter {

inline constexpr double kDefaultRegimeWindow_s = 30;

class RollingRegime {
 public:
  explicit RollingRegime(double window_s = kDefaultRegimeWindow_s) : window_s_(window_s) {}
  // Adds one round of reads; drops what fell out of the window. Samples must come in time order.
  void add(const Sample& sample, const std::vector<PowerPoint>& points);
  // The regime of the window, nullopt while the window is too short to name one (under
  // kMinWindow_s of samples).
  std::optional<RegimeReport> classify(const GpuInfo& info) const;
  void clear() { trace_ = {}; }
  const Trace& window() const { return trace_; }

 private:
  double window_s_;
  Trace trace_;
};

}  // namespace regime::exporter
