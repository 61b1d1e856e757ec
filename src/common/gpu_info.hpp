#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace regime {

// Static facts and current limits of one GPU (docs/contracts.md). Watts, degrees C, MHz.
struct GpuInfo {
  std::string device;  // the URI that opened it, e.g. "nvml:0", "sim:t4"
  int index = 0;
  std::string name;  // e.g. "NVIDIA H200"
  std::string uuid;
  // PCI bus id ("00000000:19:00.0"), empty where unknown: CUDA and NVML number GPUs differently,
  // and this (or the uuid) is what ties one to the other.
  std::string pci_bus_id;
  // The device minor number (the N of /dev/nvidiaN), where the backend knows one: schedulers
  // name GPUs by their device files (Slurm's gres.conf), and NVML's order need not follow them.
  std::optional<int> minor_number;
  std::string driver_version;  // "580.95.05"; "sim" for a simulated GPU; empty where unknown
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

// The JSON contract of docs/contracts.md; absent optionals are written as null.
nlohmann::json to_json(const GpuInfo& info);

// The one check of a cap against a device's range, for the guard, the backends and cap lists:
// Error OutOfRange "cap 900 W is outside the range of nvml:0 (200-700 W)" for a cap outside
// [min - tolerance, max + tolerance] or not finite. `device` names the device in the message.
void check_cap_in_range(double watts, double min_W, double max_W, const std::string& device,
                        double tolerance_W = 0);
void check_cap_in_range(const GpuInfo& info, double watts, double tolerance_W = 0);

}  // namespace regime
