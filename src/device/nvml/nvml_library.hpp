#pragma once
// Run-time loading of libnvidia-ml: dlopen + dlsym, no link-time dependency on NVML. One loaded
// and initialised library per process (NvmlLibrary::shared), because nvmlInit is process-wide.
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "device/nvml/nvml_abi.hpp"

namespace regime::nvml {

// The library to load: $REGIME_NVML_LIBRARY, else "libnvidia-ml.so.1" (found by the dynamic
// loader in the system's directories). In a privileged process a REGIME_NVML_LIBRARY path is
// opened by descriptor after common/files.hpp's open_trusted_file checks, and only that
// descriptor is loaded (NvmlLibrary::load).
std::string library_path();

// Whether the NVML library this process uses is a test double (it exports
// `int fakeNvmlIsTestDouble(void)` answering non-zero, as tests/fake_nvml does): its GPUs are not
// real, so their journal may live where a test says. False without REGIME_NVML_LIBRARY (the
// system's library) or when the library cannot be loaded.
bool library_is_test_double();

// Maps an NVML return code to the ErrorKind users and tests rely on.
ErrorKind error_kind(nvmlReturn_t rc);

// A typed error with a plain message: "<what> on <device>: <explanation> (NVML: <text>, code N)".
// `nvml_text` is nvmlErrorString(rc) where the library is loaded, else empty.
Error make_error(nvmlReturn_t rc, std::string_view what, std::string_view device,
                 std::string_view nvml_text = {});

// Entry points. Required ones are non-null after load; optional ones (newer or rarely present
// functions) may be null, which the backend treats as "not supported".
struct NvmlApi {
  nvmlInit_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlDeviceGetCount_fn device_count = nullptr;
  nvmlDeviceGetHandleByIndex_fn handle_by_index = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetPowerManagementLimitConstraints_fn limit_constraints = nullptr;
  nvmlDeviceGetUInt_fn default_limit = nullptr;   // nvmlDeviceGetPowerManagementDefaultLimit
  nvmlDeviceGetUInt_fn current_limit = nullptr;   // nvmlDeviceGetPowerManagementLimit
  nvmlDeviceGetUInt_fn enforced_limit = nullptr;  // nvmlDeviceGetEnforcedPowerLimit
  nvmlDeviceSetPowerManagementLimit_fn set_limit = nullptr;
  nvmlDeviceGetUInt_fn power_usage = nullptr;  // nvmlDeviceGetPowerUsage
  // Optional:
  nvmlDeviceGetTotalEnergyConsumption_fn total_energy = nullptr;
  nvmlDeviceGetTemperature_fn temperature = nullptr;
  nvmlDeviceGetTemperatureThreshold_fn temperature_threshold = nullptr;
  nvmlDeviceGetClockInfo_fn clock_info = nullptr;
  nvmlDeviceGetClockInfo_fn max_clock_info = nullptr;
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetReasons_fn clocks_event_reasons =
      nullptr;  // ...EventReasons, else ...ThrottleReasons
  nvmlDeviceGetFieldValues_fn field_values = nullptr;
  nvmlDeviceGetSamples_fn samples = nullptr;
  nvmlDeviceGetViolationStatus_fn violation_status = nullptr;
  nvmlDeviceGetPciInfo_fn pci_info = nullptr;          // nvmlDeviceGetPciInfo_v3
  nvmlDeviceGetMinorNumber_fn minor_number = nullptr;  // nvmlDeviceGetMinorNumber (Linux)
  // nvmlDeviceGetComputeRunningProcesses_v3, else _v2 (the same struct)
  nvmlDeviceGetComputeRunningProcesses_fn compute_processes = nullptr;
};

class NvmlLibrary {
 public:
  // dlopens `path`, resolves the symbols and calls nvmlInit. Error LibraryNotFound naming the
  // file and dlerror() when the file cannot be loaded or lacks a required symbol; the mapped
  // NVML error when nvmlInit fails.
  static std::shared_ptr<NvmlLibrary> load(const std::string& path);
  // The process-wide instance for library_path(); the first failure is remembered and rethrown.
  static std::shared_ptr<NvmlLibrary> shared();

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  std::string driver_version() const;  // empty where unknown
  std::string error_text(nvmlReturn_t rc) const;
  // Throws make_error(...) unless rc is NVML_SUCCESS.
  void check(nvmlReturn_t rc, std::string_view what, std::string_view device) const;
  // A symbol by name (for tests of the fake library's extras); nullptr if absent.
  void* symbol(const char* name) const;

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
  NvmlApi api_;
};

}  // namespace regime::nvml
