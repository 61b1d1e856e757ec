#pragma once
// The plain data every part of Regime exchanges: what a device reported (Sample), when a unit of
// work ran (Step), and a whole recorded run (Trace). A missing field is std::nullopt, written as an
// empty cell in the CSV (docs/contracts.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace regime {

// NVML clocks-event-reason bits (nvmlClocksEventReason*), as stored in Sample::reasons.
namespace reason {
inline constexpr uint64_t kIdle = 0x1;
inline constexpr uint64_t kApplicationClocks = 0x2;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSyncBoost = 0x10;
inline constexpr uint64_t kSwThermal = 0x20;
inline constexpr uint64_t kHwThermal = 0x40;
inline constexpr uint64_t kHwPowerBrake = 0x80;
inline constexpr uint64_t kDisplayClocks = 0x100;
}  // namespace reason

struct Sample {
  double t_s = 0;                     // Unix time for real runs, from 0 for simulated ones
  int gpu = 0;                        // device index
  std::optional<double> power_W;      // instantaneous power
  std::optional<double> power_avg_W;  // the driver's averaged power
  std::optional<double> energy_J;     // cumulative energy counter (read rarely: it is slow)
  std::optional<double> temp_C;
  std::optional<double> sm_MHz;
  std::optional<double> mem_MHz;
  std::optional<double> util_pct;
  std::optional<double> limit_W;    // enforced power limit
  std::optional<uint64_t> reasons;  // clocks-event-reason bit mask
};

// One point of the driver's own power buffer (nvmlDeviceGetSamples): finer than polling.
struct PowerPoint {
  double t_s = 0;
  double power_W = 0;
};

struct Step {
  int64_t step = 0;
  double t_start_s = 0;
  double t_end_s = 0;
  double duration_s() const { return t_end_s - t_start_s; }
};

struct Trace {
  std::vector<Sample> samples;           // time-ordered
  std::vector<Step> steps;               // time-ordered; empty when the run had no step markers
  std::vector<PowerPoint> power_points;  // driver-buffered power, where the device had it
};

}  // namespace regime
