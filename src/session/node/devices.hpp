#pragma once
// What `regime devices` and `regime limit` do: list what can be opened, check one device
// read-only, and show, set or restore one GPU's power limit.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "device/registry.hpp"
#include "session/site/target.hpp"

namespace regime::session {

// Every registered backend's listing, then the replay: scheme (sweep tables).
std::vector<DeviceListing> list_devices();

// A read-only health check of one device (Error InvalidArgument for a set that names several GPUs)
// over `seconds`: which fields it answers, what each read costs, the driver's power buffer, energy
// counter against integrated power. Never sets anything, so it is safe on a shared card.
nlohmann::json check_device(const DeviceSet& device, double seconds);

// Limits of every GPU the URI names (nvml:all: several).
std::vector<GpuInfo> show_limits(const DeviceSet& devices);

struct LimitChange {
  GpuInfo before;
  double requested_W = 0;
  double enforced_W = 0;
  std::optional<double> restored_W;  // after a hold
  bool kept = false;                 // left set, journaled for `regime restore`
  bool physical = false;
  std::string journal;  // kept on a physical GPU: the folder its original limit is journaled in
};

struct LimitRestore {
  GpuInfo before;
  double target_W = 0;
  bool from_journal = false;  // else the default limit
  double enforced_W = 0;
};

// True when the set names one GPU alone (nvml:0, sim:h200), not a list (nvml:0,1) or every GPU
// of a backend (nvml:all): `regime limit` then answers with one object rather than a list.
bool names_one_gpu(const DeviceSet& devices);

// Sets the limit through PowerLimitGuardSet on every GPU a device list names (nvml:0, nvml:0,1,
// nvml:all): all or none, a set failing on one restores the others. hold_s >= 0: holds it that
// long (calling `on_hold` for each GPU first), then restores; < 0: leaves it set and journaled.
std::vector<LimitChange> set_limits(const DeviceSet& devices, double watts, bool actuate,
                                    double hold_s,
                                    const std::function<void(const LimitChange&)>& on_hold);
// Restores every GPU a device list names to its journaled original, or its default when the
// journal has none.
std::vector<LimitRestore> restore_limits(const DeviceSet& devices, bool actuate);

}  // namespace regime::session
