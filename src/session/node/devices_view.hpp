#pragma once
// The presenters of `regime devices` and `regime limit`: the JSON and the text of the device
// listing, the device check, and each limit shown, set or restored, both built from the same
// values.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "session/node/devices.hpp"

namespace regime::session {

// {"backends": [{"backend", "available", "note", "gpus", "models"}, ...]}.
nlohmann::json to_json(const std::vector<DeviceListing>& listings);
// Per backend: its GPUs as a table of limits, its models, or why it is not available.
std::string to_text(const std::vector<DeviceListing>& listings);

// The read-only check of check_device (its JSON is the report): fields answered, read costs, the
// power buffer, the energy counter against integrated power.
std::string device_check_text(const nlohmann::json& check);

// `regime devices --cuda`: cuda:N against nvml:N for this process's CUDA_VISIBLE_DEVICES (the
// JSON of cuda_visible_gpus_json), the --device that names them, and the mapping's warnings.
std::string cuda_gpus_text(const nlohmann::json& mapping);

// {"device", "uuid", "old_limit_W", "requested_limit_W", "enforced_limit_W"}, then
// "restored_limit_W" after a hold or "kept": true.
nlohmann::json to_json(const LimitChange& change);
// {"device", "uuid", "old_limit_W", "restored_to": "journal" | "default", "enforced_limit_W"}.
nlohmann::json to_json(const LimitRestore& restore);

// What `regime limit --json` prints for the GPUs of `devices` (GpuInfo, LimitChange or
// LimitRestore): one object for one GPU named alone, else a list.
template <class Item>
nlohmann::json limits_json(const DeviceSet& devices, const std::vector<Item>& items) {
  nlohmann::json all = nlohmann::json::array();
  for (const Item& item : items) all.push_back(to_json(item));
  return all.size() == 1 && names_one_gpu(devices) ? all[0] : all;
}

// `regime limit show`: each GPU's limit range, current limit, temperature thresholds and clocks.
std::string to_text(const std::vector<GpuInfo>& gpus);
// `regime limit set`: each GPU's change, and whether it was restored after a hold or kept (and
// how to bring the original back).
std::string to_text(const std::vector<LimitChange>& changes);
// Said before a hold of `hold_s` starts: the change, and how long it is held.
std::string hold_text(const LimitChange& change, double hold_s);
// `regime limit restore`: each GPU's limit before and after, and where the target came from.
std::string to_text(const std::vector<LimitRestore>& restored);

}  // namespace regime::session
