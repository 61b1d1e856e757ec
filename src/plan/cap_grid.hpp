#pragma once
// Which caps to measure: from the device's constraints, or a user's list checked against them.
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"

namespace regime::plan {

// The default limit, then down in steps of `step_fraction` x default to the minimum limit (the
// minimum is always included). Highest first. Caps are rounded to 0.1 W (NVML takes mW).
std::vector<double> auto_cap_grid(double default_limit_W, double min_limit_W,
                                  double step_fraction = 0.05);

// A comma-separated list of watts in the order given, read by the one rule every --caps follows:
// each item a whole finite number (no unit, no empty item, no "inf"). `bad_item` is the first item
// that is not, for the caller to name in its own message (then `caps_W` stops before it).
struct CapList {
  std::vector<double> caps_W;
  std::optional<std::string> bad_item;
};
CapList read_cap_list(const std::string& text);

// "auto" gives auto_cap_grid(info); otherwise a comma-separated list of watts ("250,200,150").
// Every cap must lie in [min_limit_W, max_limit_W]: Error OutOfRange naming the range otherwise;
// Error InvalidArgument for a malformed list. Result: distinct caps, highest first.
std::vector<double> parse_caps(const std::string& text, const GpuInfo& info);

// Adds the default limit when missing: every decision compares against it.
std::vector<double> with_default(std::vector<double> caps_desc, double default_limit_W);

}  // namespace regime::plan
