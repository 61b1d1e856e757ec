#pragma once
// A physical NVIDIA GPU read and capped through NVML (loaded at run time, see nvml_library.hpp).
// backend() serves the URI scheme "nvml" (nvml:N, nvml:all).
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/gpu.hpp"
#include "device/nvml/nvml_library.hpp"
#include "device/registry.hpp"

namespace regime::nvml {

// A value of any NVML value type as a double.
double value_as_double(const nvmlValue_t& v, nvmlValueType_t type);

class NvmlGpu : public Gpu {
 public:
  NvmlGpu(std::shared_ptr<NvmlLibrary> lib, unsigned index);

  GpuInfo info() override;
  Sample read() override;
  std::optional<double> read_energy_J() override;
  std::vector<PowerPoint> drain_power_points() override;
  std::optional<ReasonTimes> read_reason_times() override;
  std::optional<std::vector<int>> compute_pids() override;
  double set_power_limit(double watts) override;
  bool is_physical() const override { return true; }
  ReadHealth read_health() const override { return health_; }

 private:
  // A text NVML writes into a buffer (the name, the UUID), read with a larger buffer where the
  // library says the first is too small.
  std::string read_text(nvmlDeviceGetName_fn get, unsigned first_size, const char* what) const;
  // Whether a field is worth asking for: a field that answered "not supported" once is not
  // asked again (the sampling loop runs every 10 ms).
  enum class Support : unsigned char { Unknown, Yes, No };
  enum Field : unsigned {
    kPowerFields,  // NVML_FI_DEV_POWER_INSTANT / _AVERAGE through nvmlDeviceGetFieldValues
    kInstant,
    kAverage,
    kPowerUsage,
    kTemp,
    kSmClock,
    kMemClock,
    kUtil,
    kReasons,
    kEnergy,
    kSamples,
    kReasonTimes,
    kThermalField,    // NVML_FI_DEV_PERF_POLICY_THERMAL, asked only when 251 and 252 are refused
    kViolationPower,  // nvmlDeviceGetViolationStatus per policy: fallbacks for refused fields
    kViolationThermal,
    kViolationSyncBoost,
    kEnforcedLimit,
    kFieldCount
  };

  // Records the outcome of a call for `field`; returns true on success. NOT_SUPPORTED,
  // NO_PERMISSION and FUNCTION_NOT_FOUND mark the field unsupported; a transient error (after
  // its retries) leaves the field empty this time, and throws once the field has failed
  // kMaxFailedReadsInARow reads in a row; any other failure throws.
  bool ok(Field field, nvmlReturn_t rc, const char* what);
  // Calls `call` until it answers something other than a transient error, at most
  // kReadAttempts times, counting the retries.
  template <typename Call>
  nvmlReturn_t retried(Call call);
  // For a value every caller needs (limits): retried, then any failure throws.
  template <typename Call>
  void require(Call call, const char* what);
  bool wanted(Field field) const { return support_[field] != Support::No; }
  // Seconds below application clocks for `policy`, when the driver answers.
  std::optional<double> violation_s(Field field, nvmlPerfPolicyType_t policy);
  std::optional<double> read_uint(Field field, nvmlDeviceGetClockInfo_fn fn, nvmlClockType_t type,
                                  const char* what);

  std::shared_ptr<NvmlLibrary> lib_;
  const NvmlApi& api_;
  nvmlDevice_t handle_ = nullptr;
  unsigned index_;
  std::string uri_;
  std::string name_;
  std::string uuid_;
  std::string pci_bus_id_;
  std::optional<int> minor_number_;
  std::string driver_version_;
  std::optional<double> slowdown_temp_C_, shutdown_temp_C_, gpu_max_temp_C_;
  std::optional<double> max_sm_MHz_, max_mem_MHz_;
  std::array<Support, kFieldCount> support_{};
  std::array<int, kFieldCount> failed_in_a_row_{};
  ReadHealth health_;
  std::array<nvmlFieldValue_t, 2> power_fields_{};
  unsigned long long last_sample_us_ = 0;
  std::vector<nvmlSample_t> sample_buffer_;
};

// The "nvml" backend for the device registry.
Backend backend();

}  // namespace regime::nvml
