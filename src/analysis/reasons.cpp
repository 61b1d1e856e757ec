#include "analysis/reasons.hpp"

#include <fmt/core.h>

#include <bit>

#include "common/name_table.hpp"

namespace regime {

// The bits count up from kIdle (0x1) to kDisplayClocks (0x100), one name each; a bit past them,
// or a value of several bits, is shown in hex.
std::string reason_name(uint64_t bit) {
  constexpr std::string_view kNames[] = {"idle",        "application_clocks", "sw_power_cap",
                                         "hw_slowdown", "sync_boost",         "sw_thermal",
                                         "hw_thermal",  "hw_power_brake",     "display_clocks"};
  if (std::has_single_bit(bit)) {
    const std::string_view name = name_of(std::countr_zero(bit), kNames, {});
    if (!name.empty()) return std::string(name);
  }
  return fmt::format("{:#x}", bit);
}

}  // namespace regime
