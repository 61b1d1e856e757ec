#pragma once
// The GPU physics of the twin as small pure functions over plain data. The time-stepped sim:
// device (src/sim/) and the steady-state solver below call the same functions, so their
// steady states agree (tested to 1%).
//
// Per unit of work (a step or an epoch), at SM clock f and die temperature T:
//   v(f)      = r                                  f <= f_floor   (voltage floor)
//             = r + (1 - r)(f - f_floor)/(f_max - f_floor)   above it
//   t(f)      = host_s + memory_s + clock_s * f_max / f
//   E_dyn(f)  = activity * P_dyn * v^2 * (clock_s + k_stall * memory_s * f / f_max)
//   P_busy    = P_base + P_leak v (1 + k_T (T - 25)) + E_dyn / t_gpu + mem_util P_mem
//   t_gpu(f_max)/t_gpu P_wait    = P_base + P_leak v (1 + k_T (T - 25))          (GPU waits for the
//   host, clocks up) P_avg     = (t_gpu P_busy + host_s P_wait) / t T_ss      = ambient + R *
//   cooling * P_avg
// The firmware governor picks the highest f in [f_min, f_max] with P_busy <= cap (it acts on a
// window shorter than host gaps). Heat stops where the silicon's limits are: software thermal
// slowdown lowers the clock ceiling by kThermalSlopePerC of f_max per degree above
// gpu_max_temp_C (the max operating temperature); at slowdown_temp_C the hardware slowdown forces
// the clock down to min_sm_MHz; at shutdown_temp_C the GPU powers off.
#include <cstdint>

#include "twin/spec.hpp"

namespace regime::twin {

// What one unit of work asks of a GPU, on that GPU (times at max_sm_MHz).
struct WorkloadParams {
  double clock_s = 0;   // time that scales with 1 / SM clock
  double memory_s = 0;  // GPU busy, bound by memory bandwidth: independent of SM clock
  double host_s = 0;    // GPU waits for the host/input pipeline
  double activity = 0;  // switching activity of the SMs while computing, relative to the spec's
  double mem_util = 0;  // DRAM bandwidth use while busy at max clock, 0..1
};

struct Environment {
  double ambient_C = 25;
  double cooling = 1;  // thermal resistance scale: 1 nominal, 2 = half as good cooling
};

inline constexpr double kStallActivity = 0.3;      // SM activity while waiting on memory
inline constexpr double kThermalSlopePerC = 0.04;  // clock ceiling drop per degree over max temp

// Power and time of one unit of work at a clock and temperature.
struct Operating {
  double time_s = 0;
  double gpu_s = 0;   // busy part of time_s
  double busy_W = 0;  // power while the GPU computes (what the governor caps)
  double avg_W = 0;   // mean power over the unit
  double util = 0;    // busy fraction, 0..1
};

double voltage_ratio(const GpuSpec& gpu, double sm_MHz);
Operating operating_point(const GpuSpec& gpu, const WorkloadParams& w, double sm_MHz,
                          double temp_C);
// Mean power and temperature of an idle GPU.
double idle_power_W(const GpuSpec& gpu, double temp_C);

// Software thermal slowdown: the clock ceiling at a temperature (max_sm_MHz up to
// gpu_max_temp_C). Hardware slowdown (slowdown_temp_C and above) is on top of it.
double thermal_ceiling_MHz(const GpuSpec& gpu, double temp_C);
bool hw_slowdown_at(const GpuSpec& gpu, double temp_C);  // temp_C >= slowdown_temp_C

// Self-consistent steady temperature while running at a fixed clock.
double steady_temp_C(const GpuSpec& gpu, const WorkloadParams& w, double sm_MHz,
                     const Environment& env);

// The mean power that holds the die at temp_C in steady state (T = ambient + R * cooling * P).
double steady_power_for_temp_W(const GpuSpec& gpu, const Environment& env, double temp_C);

struct SteadyState {
  double cap_W = 0;
  double sm_MHz = 0;
  double temp_C = 0;
  double time_s = 0;       // per unit of work
  double avg_power_W = 0;  // mean over the unit
  double busy_power_W = 0;
  double energy_J = 0;  // per unit of work
  double util_pct = 0;
  uint64_t reasons = 0;  // NVML clocks-event reasons that hold in this state
  // The cooling cannot carry the heat away even at min_sm_MHz: the GPU reaches shutdown_temp_C
  // and powers off. temp_C is then the shutdown temperature, time_s and energy_J are infinite.
  bool shutdown = false;
};

SteadyState steady_state(const GpuSpec& gpu, const WorkloadParams& w, double cap_W,
                         const Environment& env);
// At the spec's ambient temperature and nominal cooling.
SteadyState steady_state(const GpuSpec& gpu, const WorkloadParams& w, double cap_W);
Environment nominal_environment(const GpuSpec& gpu);

}  // namespace regime::twin
