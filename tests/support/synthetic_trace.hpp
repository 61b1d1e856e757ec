#pragma once
// Synthetic traces with known truth, for tests and benchmarks: a constant-power workload with
// fixed step time, optional warm-up, idle lead-in, thermal throttling or idleness, and a choice
// of which energy readings the "device" provides.
#include <cstdint>
#include <optional>

#include "analysis/measurement.hpp"
#include "trace/trace.hpp"

namespace regime::synthetic {

struct Spec {
  double seconds = 20;     // steady part
  double warmup_s = 0;     // before it: steps twice as slow at half the power
  double lead_idle_s = 0;  // before everything: no steps, idle power, idle reason
  double idle_power_W = 85;
  double sample_period_s = 0.01;
  double step_s = 0.1;  // steady step time
  bool steps = true;
  double power_W = 400;                       // steady power
  std::optional<double> second_half_power_W;  // power in the second half of the steady part
  double noise_W = 0;                         // Gaussian noise on power (fixed seed)
  double limit_W = 700;
  double util_pct = 99;
  double temp_C = 50;
  double sm_MHz = 1980;
  uint64_t reasons = 0;  // clocks-event reasons during the steady part
  EnergySource energy_source = EnergySource::Counter;  // readings present (see make())
  double counter_period_s = 1.0;                       // how often the counter is read
  double counter_update_s = 0;  // how often the driver updates it (0: always current)
};

// Counter: energy_J every counter_period_s (and the first and last sample) plus both powers;
// InstantPower: power_W and power_avg_W; AveragedPower: power_avg_W only; None: no power at all.
Trace make(const Spec& spec);

}  // namespace regime::synthetic
