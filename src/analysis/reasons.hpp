#pragma once
// Names of NVML clocks-event-reason bits (trace.hpp holds the values), for JSON and reports.
#include <cstdint>
#include <string>

#include "trace/trace.hpp"

namespace regime {

// "sw_power_cap", "hw_thermal", ...; an unknown bit as "0x200".
std::string reason_name(uint64_t bit);

// The bits that mean heat is limiting the clocks.
inline constexpr uint64_t kThermalReasons = reason::kSwThermal | reason::kHwThermal;

}  // namespace regime
