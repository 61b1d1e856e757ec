#pragma once
// The device and address options of the node's commands, typed once here: the session takes a
// DeviceSet or a ListenAddress and parses nothing. Errors InvalidArgument worded as
// device/uri.hpp, device/device_list.hpp and export/listen_address.hpp word them.
#include <string>
#include <vector>

#include "session/node/export.hpp"
#include "session/site/target.hpp"

namespace regime::cli {

// A list of GPUs as `regime limit --device` takes it: nvml:0, nvml:0,1, nvml:all, sim:h200.
session::DeviceSet parse_gpu_list(const std::string& text);
// Exactly one device URI (`regime devices --check nvml:0`).
session::DeviceSet parse_one_device(const std::string& text);
// `regime export --device` given once or more: one URI each, in order.
session::DeviceSet parse_device_uris(const std::vector<std::string>& texts);
// `regime export --listen HOST:PORT`.
exporter::ListenAddress parse_listen(const std::string& text);

}  // namespace regime::cli
