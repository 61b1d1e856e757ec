#pragma once
// Device backends by URI scheme. The program registers its backends once at start (src/cli/main.cpp
// lists them); everything else opens devices only through here and never knows which backend it
// talks to.
#include <functional>
#include <string>
#include <vector>

#include "device/gpu.hpp"
#include "device/uri.hpp"

namespace regime {

// What `regime devices` shows for one backend.
struct DeviceListing {
  std::string backend;              // "nvml", "sim"
  bool available = true;            // false: e.g. NVML library not found
  std::string note;                 // why not available, or a hint
  std::vector<GpuInfo> gpus;        // GPUs found (nvml)
  std::vector<std::string> models;  // what can be opened by name (sim models)
};

struct Backend {
  std::string scheme;
  std::function<std::vector<GpuPtr>(const DeviceUri&)> open;
  std::function<DeviceListing()> list;
};

// Adds or replaces the backend for its scheme.
void register_backend(Backend backend);
std::vector<Backend> registered_backends();  // sorted by scheme

// Opens every GPU the URI names (nvml:all may give several). Error InvalidArgument for an unknown
// scheme; the backend's own typed errors otherwise.
std::vector<GpuPtr> open_devices(const std::string& uri);
std::vector<GpuPtr> open_devices(const DeviceUri& uri);  // the same, parsed already
// Exactly one GPU; Error InvalidArgument if the URI names several.
GpuPtr open_device(const std::string& uri);
GpuPtr open_device(const DeviceUri& uri);

}  // namespace regime
