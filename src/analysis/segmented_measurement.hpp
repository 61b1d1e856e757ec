#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "analysis/measure.hpp"

namespace regime {

// A long run measured as it goes (docs/control.md, "Long runs"): each segment of the run is
// measured on its own and folded in here, and its samples are then forgotten, so what a run keeps
// is flat in its length. The result is the run's Measurement: energy summed and divided by the
// steps summed; time per step, intervals, means and fractions weighted by steps (per-second
// figures: by seconds); maxima the largest; the 0.5 s power windows merged, kept as at most
// kMaxPowerWindows weighted points, and given back as as many evenly spaced quantiles. Segments
// without a complete step count for nothing when others have steps, as a whole-run measurement
// leaves out the time outside its steps.
class SegmentedMeasurement {
 public:
  static constexpr size_t kMaxPowerWindows = 1024;
  void add(const Measurement& segment);
  int segments() const { return steps_.count + seconds_.count; }
  // Error Internal before the first add().
  Measurement result() const;

 private:
  struct Weighted {
    double sum = 0, weight = 0;
    void add(const std::optional<double>& v, double w) {
      if (v) sum += *v * w, weight += w;
    }
    std::optional<double> mean() const {
      return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
    }
  };
  // The segments of one kind folded: with steps (weights: steps) or without (weights: seconds).
  struct Fold {
    Measurement first;
    int count = 0;
    double end_s = 0, energy_J = 0, seconds = 0, weight = 0;
    int steps = 0, samples = 0;
    EnergySource source = EnergySource::Counter;
    // Sums of weight * value and of (weight * interval half-width)^2.
    double time_sum = 0, time_lo2 = 0, time_hi2 = 0, energy_lo2 = 0, energy_hi2 = 0;
    Weighted p95_W, temp_C, sm_MHz, p05_sm_MHz, util_pct, limit_W, gap;
    std::optional<double> max_temp_C, max_sm_MHz;
    std::map<uint64_t, double> reason_seconds;
    bool reasons_known = false;
    std::vector<std::pair<double, double>> window_power_W;  // (W, windows it stands for), sorted
    void add(const Measurement& m, double weight);
    Measurement result() const;
  };
  Fold steps_, seconds_;
};

}  // namespace regime
