#pragma once
// A GPU's info for tests that need only its name and limits, made in one line.
#include <string>
#include <utility>

#include "common/gpu_info.hpp"

namespace regime::testing {

// `device` ("sim:t4"), its limit range [min_W, max_W] with max_W the default, and `current_W`
// both set and enforced; 0 leaves the current and enforced limits unset.
inline GpuInfo gpu_with_limits(std::string device, double min_W, double max_W,
                               double current_W = 0) {
  GpuInfo g;
  g.device = std::move(device);
  g.min_limit_W = min_W;
  g.max_limit_W = max_W;
  g.default_limit_W = max_W;
  g.current_limit_W = current_W;
  g.enforced_limit_W = current_W;
  return g;
}

}  // namespace regime::testing
