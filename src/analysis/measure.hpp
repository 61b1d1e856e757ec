#pragma once
// measure(): a Trace in, a Measurement out (docs/analysis.md "Measurement"). Pure functions.
//
// Energy per step = energy of the steady window / complete steps in it, where the window runs from
// the start of the first steady step to the end of the last step (time between steps is charged
// to the steps: it is energy the work cost). The window's energy comes from the first source that
// covers it: the cumulative counter interpolated linearly at the window edges; else the trapezoid
// integral of instantaneous power (the driver's buffer when present, else polled power_W); else
// of the driver's averaged power. Its interval is a block bootstrap of that ratio over blocks of
// about kEnergyBlock_s. Time per step is the median step duration with a bootstrap interval.
// Without steps every "per step" figure is per second of the window.
#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/measurement.hpp"
#include "analysis/statistics.hpp"
#include "trace/trace.hpp"

namespace regime {

inline constexpr double kEnergyBlock_s = 1.0;  // the counter is read about once a second
inline constexpr int kMinEnergyBlocks = 5;
// Window of Measurement::window_power_W: a power limiter acts on power averaged over a short
// window. 0.5 s separates the real H200 runs (held at the cap vs never capped) and is a hypothesis
// checked on the simulator (docs/analysis.md, "Binding evidence").
inline constexpr double kWindowPower_s = 0.5;

struct MeasureOptions {
  bool use_steps = true;            // false: --no-steps, per-second figures
  bool detect_steady_state = true;  // drop the warm-up (steady_state.hpp)
  std::optional<double> warmup_s;   // instead of detection: drop this many seconds from the start
  std::optional<int> gpu;           // GPU of a multi-GPU trace; default: the first sample's
  BootstrapOptions bootstrap;
  double window_power_s = kWindowPower_s;
};

// The whole trace.
Measurement measure(const Trace& trace, const MeasureOptions& opts = {});

// Only [t0_s, t1_s]: the steps wholly inside it, and the samples over it (e.g. one cap of a
// sweep). Steady-state detection and warmup_s apply within the window as in measure().
Measurement measure_window(const Trace& trace, double t0_s, double t1_s,
                           const MeasureOptions& opts = {});

// What is wrong with the figures of `m` a decision compares, in words ("the time per step is 0 s,
// not above 0"), or
// "" when each is a finite number above 0. A ratio against such a figure is NaN or infinite: a
// caller says it cannot decide rather than compare it.
std::string undecidable_figure(const Measurement& m);

// The issue-3 contract fields plus the rest of the Measurement (units in the keys).
nlohmann::json to_json(const Measurement& m);

}  // namespace regime
