#include "analysis/reasons.hpp"

#include <fmt/core.h>

namespace regime {

std::string reason_name(uint64_t bit) {
  switch (bit) {
    case reason::kIdle:
      return "idle";
    case reason::kApplicationClocks:
      return "application_clocks";
    case reason::kSwPowerCap:
      return "sw_power_cap";
    case reason::kHwSlowdown:
      return "hw_slowdown";
    case reason::kSyncBoost:
      return "sync_boost";
    case reason::kSwThermal:
      return "sw_thermal";
    case reason::kHwThermal:
      return "hw_thermal";
    case reason::kHwPowerBrake:
      return "hw_power_brake";
    case reason::kDisplayClocks:
      return "display_clocks";
    default:
      return fmt::format("{:#x}", bit);
  }
}

}  // namespace regime
