#include "support/synthetic_trace.hpp"

#include <cmath>
#include <random>

namespace regime::synthetic {

Trace make(const Spec& spec) {
  Trace trace;
  const double work_start_s = spec.lead_idle_s;
  const double steady_start_s = work_start_s + spec.warmup_s;
  const double end_s = steady_start_s + spec.seconds;
  const double half_s = steady_start_s + spec.seconds / 2;

  if (spec.steps) {
    // Step times are computed from their index, not accumulated, so edges land exactly.
    int64_t n = 0;
    const auto warm_steps = static_cast<int64_t>(std::floor(spec.warmup_s / (2 * spec.step_s)));
    for (int64_t i = 0; i < warm_steps; ++i, ++n)
      trace.steps.push_back({n, work_start_s + static_cast<double>(i) * 2 * spec.step_s,
                             work_start_s + static_cast<double>(i + 1) * 2 * spec.step_s});
    const auto steady_steps = static_cast<int64_t>(std::floor(spec.seconds / spec.step_s + 1e-9));
    for (int64_t i = 0; i < steady_steps; ++i, ++n)
      trace.steps.push_back({n, steady_start_s + static_cast<double>(i) * spec.step_s,
                             steady_start_s + static_cast<double>(i + 1) * spec.step_s});
  }

  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(0.0, spec.noise_W > 0 ? spec.noise_W : 1.0);
  const auto count = static_cast<int64_t>(std::llround(end_s / spec.sample_period_s)) + 1;
  trace.samples.reserve(static_cast<size_t>(count));
  double energy_J = 1000;  // counters do not start at zero
  double next_counter_s = 0;
  double reported_J = energy_J, next_update_s = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double t = static_cast<double>(i) * spec.sample_period_s;
    Sample s;
    s.t_s = t;
    double power = spec.power_W;
    s.util_pct = spec.util_pct;
    s.sm_MHz = spec.sm_MHz;
    s.temp_C = spec.temp_C;
    s.reasons = spec.reasons;
    if (t < work_start_s) {
      power = spec.idle_power_W;
      s.util_pct = 0;
      s.sm_MHz = 345;
      s.reasons = reason::kIdle;
    } else if (t < steady_start_s) {
      power = spec.power_W / 2;
      s.util_pct = spec.util_pct / 2;
    } else if (spec.second_half_power_W && t >= half_s) {
      power = *spec.second_half_power_W;
    }
    if (spec.noise_W > 0) power += noise(rng);
    // Trapezoid truth: the measured integral of a piecewise-linear power is exact.
    if (i > 0) energy_J += 0.5 * (power + *trace.samples.back().power_W) * spec.sample_period_s;
    s.power_W = power;
    s.power_avg_W = power;
    // The driver refreshes the counter every counter_update_s: reads in between repeat it.
    if (spec.counter_update_s <= 0 || t >= next_update_s - 1e-9) {
      reported_J = energy_J;
      next_update_s = t + spec.counter_update_s;
    }
    if (t >= next_counter_s - 1e-9 || i + 1 == count) {
      s.energy_J = reported_J;
      next_counter_s = t + spec.counter_period_s;
    }
    s.mem_MHz = 3201;
    s.limit_W = spec.limit_W;
    trace.samples.push_back(s);
  }
  // Strip the readings the chosen source says the device lacks (after the energy bookkeeping).
  for (Sample& s : trace.samples) {
    switch (spec.energy_source) {
      case EnergySource::Counter:
        break;
      case EnergySource::InstantPower:
        s.energy_J.reset();
        break;
      case EnergySource::AveragedPower:
        s.energy_J.reset();
        s.power_W.reset();
        break;
      case EnergySource::None:
        s.energy_J.reset();
        s.power_W.reset();
        s.power_avg_W.reset();
        break;
    }
  }
  return trace;
}

}  // namespace regime::synthetic
