#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace regime {

// Static facts and current limits of one GPU (DESIGN.md section 3). Watts, degrees C, MHz.
struct GpuInfo {
  std::string device;  // the URI that opened it, e.g. "nvml:0", "sim:t4"
  int index = 0;
  std::string name;  // e.g. "NVIDIA H200"
  std::string uuid;
  double min_limit_W = 0;
  double max_limit_W = 0;
  double default_limit_W = 0;
  double current_limit_W = 0;   // what was last set (nvmlDeviceGetPowerManagementLimit)
  double enforced_limit_W = 0;  // what the driver enforces now (may be lower, e.g. other caps)
  std::optional<double> slowdown_temp_C;
  std::optional<double> shutdown_temp_C;
  std::optional<double> gpu_max_temp_C;
  std::optional<double> max_sm_MHz;
  std::optional<double> max_mem_MHz;
};

// The JSON contract of DESIGN.md section 3; absent optionals are written as null.
nlohmann::json to_json(const GpuInfo& info);

}  // namespace regime
