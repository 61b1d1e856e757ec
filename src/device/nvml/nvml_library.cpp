#include "device/nvml/nvml_library.hpp"

#include <dlfcn.h>
#include <fmt/core.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include "common/files.hpp"
#include "common/paths.hpp"

namespace regime::nvml {

std::string library_path() {
  const char* v = std::getenv("REGIME_NVML_LIBRARY");
  return (v != nullptr && *v != '\0') ? v : "libnvidia-ml.so.1";
}

namespace {
// A library named by REGIME_NVML_LIBRARY runs with this process's rights. A privileged process
// (one that can change GPU limits) loads only a file that no other user can have chosen: it is
// opened once, by descriptor, after checking every component of its path
// (common/files.hpp, open_trusted_file), and the loader is given that descriptor
// (/proc/self/fd/N), so no link or file swapped in between is ever loaded. An unprivileged
// process can only hurt itself and loads the path as given.
struct LoadTarget {
  std::string dlopen_name;  // what dlopen is given
  int fd = -1;              // the checked file, held open until dlopen has mapped it
};

LoadTarget choose_load_target(const std::string& path) {
  // A bare name is looked up by the dynamic loader in the system's own directories.
  if (path.find('/') == std::string::npos || !running_privileged()) return {path, -1};
  int fd = -1;
  try {
    fd = open_trusted_file(path, ::geteuid());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::NoPermission)
      throw Error(ErrorKind::LibraryNotFound,
                  fmt::format("cannot load the NVML library {}: {} (install the NVIDIA driver, or "
                              "set REGIME_NVML_LIBRARY to the file)",
                              path, e.what()));
    throw Error(ErrorKind::NoPermission,
                fmt::format("refusing to load REGIME_NVML_LIBRARY={} in a process that can "
                            "change GPU limits: {} (such a library must be owned by root and "
                            "writable by no one else, in folders only root can change)",
                            path, e.what()));
  }
  return {fmt::format("/proc/self/fd/{}", fd), fd};
}
}  // namespace

ErrorKind error_kind(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      return ErrorKind::NoPermission;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_DEPRECATED:
      return ErrorKind::NotSupported;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED:
      return ErrorKind::GpuLost;
    case NVML_ERROR_UNINITIALIZED:
      return ErrorKind::Uninitialized;
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return ErrorKind::LibraryNotFound;
    case NVML_ERROR_INVALID_ARGUMENT:
      return ErrorKind::InvalidArgument;
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_GPU_NOT_FOUND:
      return ErrorKind::NotFound;
    case NVML_ERROR_OPERATING_SYSTEM:
      return ErrorKind::Io;
    default:
      return ErrorKind::Internal;
  }
}

namespace {
// What the user should know or do, per return code.
std::string_view explanation(nvmlReturn_t rc, std::string_view what) {
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      // Only a set needs the privilege; a read refused so is a driver restriction.
      if (what.find("Set") != std::string_view::npos)
        return "no permission: changing a power limit needs root or CAP_SYS_ADMIN (e.g. run with "
               "sudo)";
      return "no permission to read this: the driver restricts it (to root, or by the "
             "administrator's settings)";
    case NVML_ERROR_NOT_SUPPORTED:
      return "not supported by this GPU or driver";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "this driver's NVML lacks the function";
    case NVML_ERROR_GPU_IS_LOST:
      return "the GPU is lost (fell off the bus or stopped answering); check `nvidia-smi` and "
             "dmesg, a GPU reset or reboot may be needed";
    case NVML_ERROR_RESET_REQUIRED:
      return "the GPU needs a reset before it can be used";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML is not initialised";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "the NVIDIA kernel driver is not loaded";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "the NVML library and the kernel driver have different versions (reboot or "
             "reinstall the driver)";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case NVML_ERROR_NOT_FOUND:
      return "not found";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU not found";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "the GPU's external power cables are not attached";
    case NVML_ERROR_TIMEOUT:
      return "the driver timed out";
    case NVML_ERROR_UNKNOWN:
      return "the driver gave an unknown error";
    case NVML_ERROR_IN_USE:
      return "in use by another client";
    case NVML_ERROR_NO_DATA:
      return "no data";
    default:
      return "NVML call failed";
  }
}
}  // namespace

Error make_error(nvmlReturn_t rc, std::string_view what, std::string_view device,
                 std::string_view nvml_text) {
  std::string where = device.empty() ? std::string(what) : fmt::format("{} on {}", what, device);
  std::string detail = nvml_text.empty()
                           ? fmt::format("NVML code {}", static_cast<int>(rc))
                           : fmt::format("NVML: {}, code {}", nvml_text, static_cast<int>(rc));
  return Error(error_kind(rc), fmt::format("{}: {} ({})", where, explanation(rc, what), detail));
}

NvmlLibrary::~NvmlLibrary() {
  // No dlclose: NVML keeps threads and atexit handlers; unloading it under them is unsafe.
  if (api_.shutdown != nullptr) api_.shutdown();
}

void* NvmlLibrary::symbol(const char* name) const { return ::dlsym(handle_, name); }

std::string NvmlLibrary::error_text(nvmlReturn_t rc) const {
  const char* s = api_.error_string != nullptr ? api_.error_string(rc) : nullptr;
  return s != nullptr ? s : "";
}

void NvmlLibrary::check(nvmlReturn_t rc, std::string_view what, std::string_view device) const {
  if (rc != NVML_SUCCESS) throw make_error(rc, what, device, error_text(rc));
}

std::string NvmlLibrary::driver_version() const {
  if (api_.driver_version == nullptr) return "";
  char buf[kDriverBufferSize] = {};
  if (api_.driver_version(buf, sizeof buf) != NVML_SUCCESS) return "";
  return buf;
}

namespace {
// Prefers the versioned names the real library exports (nvmlInit_v2 ...), then the plain one.
template <typename Fn>
Fn resolve(void* handle, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = ::dlsym(handle, n)) return reinterpret_cast<Fn>(p);
  }
  return nullptr;
}
}  // namespace

std::shared_ptr<NvmlLibrary> NvmlLibrary::load(const std::string& path) {
  LoadTarget target = choose_load_target(path);
  ::dlerror();
  void* handle = ::dlopen(target.dlopen_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (target.fd >= 0) ::close(target.fd);  // mapped (or refused): the descriptor is done
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw Error(ErrorKind::LibraryNotFound,
                fmt::format("cannot load the NVML library {}: {} (install the NVIDIA driver, or "
                            "set REGIME_NVML_LIBRARY to the file)",
                            path, why != nullptr ? why : "unknown reason"));
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, path));
  NvmlApi& a = lib->api_;
  a.init = resolve<nvmlInit_fn>(handle, {"nvmlInit_v2", "nvmlInit"});
  a.shutdown = resolve<nvmlShutdown_fn>(handle, {"nvmlShutdown"});
  a.error_string = resolve<nvmlErrorString_fn>(handle, {"nvmlErrorString"});
  a.driver_version = resolve<nvmlSystemGetDriverVersion_fn>(handle, {"nvmlSystemGetDriverVersion"});
  a.device_count =
      resolve<nvmlDeviceGetCount_fn>(handle, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  a.handle_by_index = resolve<nvmlDeviceGetHandleByIndex_fn>(
      handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  a.name = resolve<nvmlDeviceGetName_fn>(handle, {"nvmlDeviceGetName"});
  a.uuid = resolve<nvmlDeviceGetUUID_fn>(handle, {"nvmlDeviceGetUUID"});
  a.limit_constraints = resolve<nvmlDeviceGetPowerManagementLimitConstraints_fn>(
      handle, {"nvmlDeviceGetPowerManagementLimitConstraints"});
  a.default_limit =
      resolve<nvmlDeviceGetUInt_fn>(handle, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  a.current_limit = resolve<nvmlDeviceGetUInt_fn>(handle, {"nvmlDeviceGetPowerManagementLimit"});
  a.enforced_limit = resolve<nvmlDeviceGetUInt_fn>(handle, {"nvmlDeviceGetEnforcedPowerLimit"});
  a.set_limit =
      resolve<nvmlDeviceSetPowerManagementLimit_fn>(handle, {"nvmlDeviceSetPowerManagementLimit"});
  a.power_usage = resolve<nvmlDeviceGetUInt_fn>(handle, {"nvmlDeviceGetPowerUsage"});
  a.total_energy = resolve<nvmlDeviceGetTotalEnergyConsumption_fn>(
      handle, {"nvmlDeviceGetTotalEnergyConsumption"});
  a.temperature = resolve<nvmlDeviceGetTemperature_fn>(handle, {"nvmlDeviceGetTemperature"});
  a.temperature_threshold =
      resolve<nvmlDeviceGetTemperatureThreshold_fn>(handle, {"nvmlDeviceGetTemperatureThreshold"});
  a.clock_info = resolve<nvmlDeviceGetClockInfo_fn>(handle, {"nvmlDeviceGetClockInfo"});
  a.max_clock_info = resolve<nvmlDeviceGetClockInfo_fn>(handle, {"nvmlDeviceGetMaxClockInfo"});
  a.utilization =
      resolve<nvmlDeviceGetUtilizationRates_fn>(handle, {"nvmlDeviceGetUtilizationRates"});
  a.clocks_event_reasons = resolve<nvmlDeviceGetReasons_fn>(
      handle,
      {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  a.field_values = resolve<nvmlDeviceGetFieldValues_fn>(handle, {"nvmlDeviceGetFieldValues"});
  a.samples = resolve<nvmlDeviceGetSamples_fn>(handle, {"nvmlDeviceGetSamples"});
  a.violation_status =
      resolve<nvmlDeviceGetViolationStatus_fn>(handle, {"nvmlDeviceGetViolationStatus"});
  a.pci_info = resolve<nvmlDeviceGetPciInfo_fn>(handle, {"nvmlDeviceGetPciInfo_v3"});
  a.minor_number = resolve<nvmlDeviceGetMinorNumber_fn>(handle, {"nvmlDeviceGetMinorNumber"});
  a.compute_processes = resolve<nvmlDeviceGetComputeRunningProcesses_fn>(
      handle,
      {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});

  const std::pair<const void*, const char*> required[] = {
      {reinterpret_cast<const void*>(a.init), "nvmlInit_v2"},
      {reinterpret_cast<const void*>(a.device_count), "nvmlDeviceGetCount_v2"},
      {reinterpret_cast<const void*>(a.handle_by_index), "nvmlDeviceGetHandleByIndex_v2"},
      {reinterpret_cast<const void*>(a.name), "nvmlDeviceGetName"},
      {reinterpret_cast<const void*>(a.uuid), "nvmlDeviceGetUUID"},
      {reinterpret_cast<const void*>(a.limit_constraints),
       "nvmlDeviceGetPowerManagementLimitConstraints"},
      {reinterpret_cast<const void*>(a.default_limit), "nvmlDeviceGetPowerManagementDefaultLimit"},
      {reinterpret_cast<const void*>(a.current_limit), "nvmlDeviceGetPowerManagementLimit"},
      {reinterpret_cast<const void*>(a.enforced_limit), "nvmlDeviceGetEnforcedPowerLimit"},
      {reinterpret_cast<const void*>(a.set_limit), "nvmlDeviceSetPowerManagementLimit"},
      {reinterpret_cast<const void*>(a.power_usage), "nvmlDeviceGetPowerUsage"},
  };
  for (const auto& [p, name] : required) {
    if (p == nullptr) {
      lib->api_.shutdown = nullptr;  // never initialised
      throw Error(ErrorKind::LibraryNotFound,
                  fmt::format("the NVML library {} lacks the function {}: the driver is too old "
                              "or the file is not NVML",
                              path, name));
    }
  }
  nvmlReturn_t rc = a.init();
  if (rc != NVML_SUCCESS) {
    std::string text = lib->error_text(rc);
    lib->api_.shutdown = nullptr;
    throw make_error(rc, "nvmlInit_v2 (" + path + ")", "", text);
  }
  return lib;
}

bool library_is_test_double() {
  const char* v = std::getenv("REGIME_NVML_LIBRARY");
  if (v == nullptr || *v == '\0') return false;
  try {
    using IsTestDouble = int (*)();
    auto fn = reinterpret_cast<IsTestDouble>(NvmlLibrary::shared()->symbol("fakeNvmlIsTestDouble"));
    return fn != nullptr && fn() != 0;
  } catch (const Error&) {
    return false;
  }
}

std::shared_ptr<NvmlLibrary> NvmlLibrary::shared() {
  static std::mutex mu;
  static std::shared_ptr<NvmlLibrary> lib;
  static std::optional<Error> failure;
  std::lock_guard lock(mu);
  if (lib) return lib;
  if (failure) throw *failure;
  try {
    lib = load(library_path());
  } catch (const Error& e) {
    failure = e;
    throw;
  }
  return lib;
}

}  // namespace regime::nvml
