#include "twin/model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trace/trace.hpp"

namespace regime::twin {

namespace {

constexpr double kRefTempC = 25.0;

double leakage_scale(const GpuSpec& gpu, double temp_C) {
  // Linear in temperature; clamped so a wild input cannot make it negative.
  return std::max(0.2, 1.0 + gpu.leakage_per_C * (temp_C - kRefTempC));
}

// Smallest f in [lo, hi] with rises(f) true, for a predicate false below and true above a point.
template <class F>
double bisect_MHz(double lo, double hi, F rises) {
  for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; ++i) {
    double mid = 0.5 * (lo + hi);
    (rises(mid) ? hi : lo) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double voltage_ratio(const GpuSpec& gpu, double sm_MHz) {
  const double r = gpu.voltage_floor_ratio;
  if (sm_MHz <= gpu.voltage_floor_MHz) return r;
  return r +
         (1.0 - r) * (sm_MHz - gpu.voltage_floor_MHz) / (gpu.max_sm_MHz - gpu.voltage_floor_MHz);
}

Operating operating_point(const GpuSpec& gpu, const WorkloadParams& w, double sm_MHz,
                          double temp_C) {
  const double f_rel = sm_MHz / gpu.max_sm_MHz;
  const double v = voltage_ratio(gpu, sm_MHz);
  Operating op;
  op.gpu_s = w.memory_s + w.clock_s / f_rel;
  op.time_s = w.host_s + op.gpu_s;
  const double gpu_at_max_s = w.memory_s + w.clock_s;
  const double static_W = gpu.base_power_W + gpu.leakage_power_W * v * leakage_scale(gpu, temp_C);
  const double dyn_J =
      w.activity * gpu.dynamic_power_W * v * v * (w.clock_s + kStallActivity * w.memory_s * f_rel);
  const double mem_J = w.mem_util * gpu.memory_power_W * gpu_at_max_s;
  op.busy_W = op.gpu_s > 0 ? static_W + (dyn_J + mem_J) / op.gpu_s : static_W;
  op.avg_W = op.time_s > 0 ? (op.gpu_s * op.busy_W + w.host_s * static_W) / op.time_s : static_W;
  op.util = op.time_s > 0 ? op.gpu_s / op.time_s : 0;
  return op;
}

double idle_power_W(const GpuSpec& gpu, double temp_C) {
  // Idle clocks sit at the voltage floor: only the floor share of leakage rises with temperature.
  return gpu.idle_power_W + gpu.leakage_power_W * gpu.voltage_floor_ratio *
                                (leakage_scale(gpu, temp_C) - leakage_scale(gpu, gpu.ambient_C));
}

double thermal_ceiling_MHz(const GpuSpec& gpu, double temp_C) {
  if (temp_C <= gpu.gpu_max_temp_C) return gpu.max_sm_MHz;
  double f = gpu.max_sm_MHz * (1.0 - kThermalSlopePerC * (temp_C - gpu.gpu_max_temp_C));
  return std::max(gpu.min_sm_MHz, f);
}

bool hw_slowdown_at(const GpuSpec& gpu, double temp_C) { return temp_C >= gpu.slowdown_temp_C; }

double steady_temp_C(const GpuSpec& gpu, const WorkloadParams& w, double sm_MHz,
                     const Environment& env) {
  // P_avg is linear in T (leakage), so T = Ta + R P_avg(T) solves in closed form.
  const double R = gpu.thermal_resistance_C_per_W * env.cooling;
  const double p0 = operating_point(gpu, w, sm_MHz, kRefTempC).avg_W;
  const double p1 = operating_point(gpu, w, sm_MHz, kRefTempC + 1.0).avg_W - p0;  // W per C
  const double denom = std::max(0.1, 1.0 - R * p1);
  return (env.ambient_C + R * (p0 - kRefTempC * p1)) / denom;
}

double steady_power_for_temp_W(const GpuSpec& gpu, const Environment& env, double temp_C) {
  return (temp_C - env.ambient_C) / (gpu.thermal_resistance_C_per_W * env.cooling);
}

Environment nominal_environment(const GpuSpec& gpu) { return {gpu.ambient_C, 1.0}; }

SteadyState steady_state(const GpuSpec& gpu, const WorkloadParams& w, double cap_W) {
  return steady_state(gpu, w, cap_W, nominal_environment(gpu));
}

SteadyState steady_state(const GpuSpec& gpu, const WorkloadParams& w, double cap_W,
                         const Environment& env) {
  const double f_lo = gpu.min_sm_MHz, f_hi = gpu.max_sm_MHz;
  auto temp_at = [&](double f) { return steady_temp_C(gpu, w, f, env); };
  auto over_cap = [&](double f) { return operating_point(gpu, w, f, temp_at(f)).busy_W > cap_W; };
  auto over_thermal = [&](double f) { return f > thermal_ceiling_MHz(gpu, temp_at(f)); };

  double f_cap = over_cap(f_hi) ? (over_cap(f_lo) ? f_lo : bisect_MHz(f_lo, f_hi, over_cap)) : f_hi;
  double f_thermal = over_thermal(f_hi)
                         ? (over_thermal(f_lo) ? f_lo : bisect_MHz(f_lo, f_hi, over_thermal))
                         : f_hi;
  double f = std::clamp(std::min(f_cap, f_thermal), f_lo, f_hi);

  SteadyState s;
  s.cap_W = cap_W;
  const double tol_MHz = 1e-6 * f_hi;
  if (f_cap < f_hi - tol_MHz && f_cap <= f_thermal + tol_MHz) s.reasons |= reason::kSwPowerCap;
  if (f_thermal < f_hi - tol_MHz && f_thermal < f_cap + tol_MHz) s.reasons |= reason::kSwThermal;

  if (!hw_slowdown_at(gpu, temp_at(f))) {
    s.sm_MHz = f;
    s.temp_C = temp_at(f);
    Operating op = operating_point(gpu, w, f, s.temp_C);
    s.time_s = op.time_s;
    s.avg_power_W = op.avg_W;
    s.busy_power_W = op.busy_W;
    s.energy_J = op.avg_W * op.time_s;
    s.util_pct = 100.0 * op.util;
    return s;
  }

  // Hardware slowdown: at slowdown_temp_C the clock drops to f_lo until the die cools below it,
  // then returns to what the governor and the software ceiling allow there. The die thus sits at
  // the slowdown temperature, the clock switching between the two: the share of time at f_lo
  // is what brings the mean power down to the power that holds that temperature.
  s.reasons |= reason::kHwThermal;
  const double hold_C = gpu.slowdown_temp_C;
  const double f_run = std::clamp(std::min(f_cap, thermal_ceiling_MHz(gpu, hold_C)), f_lo, f_hi);
  const Operating run = operating_point(gpu, w, f_run, hold_C);
  const Operating slow = operating_point(gpu, w, f_lo, hold_C);
  const double hold_W = steady_power_for_temp_W(gpu, env, hold_C);
  if (slow.avg_W >= hold_W) {
    // Even at f_lo the die heats past the slowdown temperature: it settles at f_lo, or shuts down.
    s.sm_MHz = f_lo;
    s.temp_C = temp_at(f_lo);
    Operating op = operating_point(gpu, w, f_lo, s.temp_C);
    s.time_s = op.time_s;
    s.avg_power_W = op.avg_W;
    s.busy_power_W = op.busy_W;
    s.energy_J = op.avg_W * op.time_s;
    s.util_pct = 100.0 * op.util;
  } else {
    const double slow_share = std::clamp((run.avg_W - hold_W) / (run.avg_W - slow.avg_W), 0.0, 1.0);
    // Work rate is the time-weighted mean of the two states' rates.
    const double steps_per_s = slow_share / slow.time_s + (1 - slow_share) / run.time_s;
    s.sm_MHz = slow_share * f_lo + (1 - slow_share) * f_run;
    s.temp_C = hold_C;
    s.time_s = 1.0 / steps_per_s;
    s.avg_power_W = slow_share * slow.avg_W + (1 - slow_share) * run.avg_W;
    s.busy_power_W = slow_share * slow.busy_W + (1 - slow_share) * run.busy_W;
    s.energy_J = s.avg_power_W * s.time_s;
    s.util_pct = 100.0 * (slow_share * slow.util + (1 - slow_share) * run.util);
  }
  if (s.temp_C >= gpu.shutdown_temp_C) {
    s.shutdown = true;
    s.temp_C = gpu.shutdown_temp_C;
    s.time_s = s.energy_J = std::numeric_limits<double>::infinity();
  }
  return s;
}

}  // namespace regime::twin
