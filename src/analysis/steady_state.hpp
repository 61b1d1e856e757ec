#pragma once
// Steady-state detection: where the warm-up ends (docs/analysis.md "Steady state").
//
// The candidate span is cut into blocks of at least kSettleBlock_s. The reference is the second
// half of the span (by steps, or by time without steps): the median of its block statistics, and
// a tolerance of max(10% of it, 3 robust SDs of its blocks). The steady window starts at the first
// block that, with the block after it, lies within tolerance in step time (mean per block) and
// power (mean per block); at most half the span is ever dropped. Without steps the same test on
// power also trims a trailing tail (the workload ended before the trace did).
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "analysis/series.hpp"
#include "trace/trace.hpp"

namespace regime {

inline constexpr double kSettleBlock_s = 0.5;
inline constexpr double kSettleRelTolerance = 0.10;
inline constexpr double kSettleRobustSds = 3.0;
inline constexpr double kSettleMinPowerTolerance_W = 10.0;
inline constexpr size_t kSettleMinSteps = 10;  // fewer: nothing is dropped

struct SteadySteps {
  size_t first = 0;  // index of the first steady step in the given span
  std::string rule;  // what was done, for the report
};

// `steps` are the complete steps of the span, time-ordered; `power` a cumulative energy function
// of fine-grained power (may be empty: then only step time is judged).
SteadySteps settle_steps(std::span<const Step> steps, const detail::Cumulative& power);

struct SteadyTime {
  double start_s = 0;
  double end_s = 0;
  std::string rule;
};

// Without steps: the settled part of [t0, t1] judged on power alone.
SteadyTime settle_time(double t0_s, double t1_s, const detail::Cumulative& power);

// Least-squares slopes of temperature (C per minute) and of power (relative to its mean, per
// minute) over the samples of `gpu` in [t0, t1], each with its standard error: whether a card has
// settled after a cap change. A field the samples lack (or fewer than 3 samples) gives nullopt.
struct Slope {
  double per_min = 0;
  double se_per_min = 0;
};
struct TrailingSlopes {
  std::optional<Slope> temp_C;
  std::optional<Slope> power_rel;
  int samples = 0;
};
TrailingSlopes trailing_slopes(const Trace& trace, double t0_s, double t1_s, int gpu = 0);

// Settled within tolerances: each slope, less two standard errors (the noise of a short window),
// within its tolerance. A missing field does not hold it back.
bool slopes_flat(const TrailingSlopes& s, double temp_C_per_min, double power_rel_per_min);

}  // namespace regime
