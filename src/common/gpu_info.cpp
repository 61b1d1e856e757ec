#include "common/gpu_info.hpp"

#include <fmt/core.h>

#include <cmath>

#include "common/error.hpp"
#include "common/json_fields.hpp"

namespace regime {

nlohmann::json to_json(const GpuInfo& i) {
  return nlohmann::json{{"device", i.device},
                        {"index", i.index},
                        {"name", i.name},
                        {"uuid", i.uuid},
                        {"minor_number", json_or_null(i.minor_number)},
                        {"min_limit_W", i.min_limit_W},
                        {"max_limit_W", i.max_limit_W},
                        {"default_limit_W", i.default_limit_W},
                        {"current_limit_W", i.current_limit_W},
                        {"enforced_limit_W", i.enforced_limit_W},
                        {"slowdown_temp_C", json_or_null(i.slowdown_temp_C)},
                        {"shutdown_temp_C", json_or_null(i.shutdown_temp_C)},
                        {"max_sm_MHz", json_or_null(i.max_sm_MHz)},
                        {"max_mem_MHz", json_or_null(i.max_mem_MHz)}};
}

void check_cap_in_range(double watts, double min_W, double max_W, const std::string& device,
                        double tolerance_W) {
  if (!std::isfinite(watts) || watts < min_W - tolerance_W || watts > max_W + tolerance_W)
    throw Error(ErrorKind::OutOfRange,
                fmt::format("cap {:g} W is outside the range of {} ({:g}-{:g} W)", watts, device,
                            min_W, max_W));
}

void check_cap_in_range(const GpuInfo& info, double watts, double tolerance_W) {
  check_cap_in_range(watts, info.min_limit_W, info.max_limit_W,
                     info.device.empty() ? info.name : info.device, tolerance_W);
}

}  // namespace regime
