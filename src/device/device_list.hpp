#pragma once
// A --device value that names several GPUs: "nvml:0,1", "nvml:all", "sim:t4,sim:gv100",
// "sim:t4,ambient_C=35,sim:l4". Commas separate both devices and a sim device's parameters, so a
// piece with a scheme starts a device, a key=value piece belongs to the device before it, and a
// bare index after an nvml device is another nvml GPU.
#include <string>
#include <vector>

#include "device/uri.hpp"

namespace regime {

// The devices in the order given, each parsed once as parse_device_uri parses it ("nvml:all"
// stays one entry: the backend expands it). Error InvalidArgument for an empty list, an empty
// piece, a parameter or index with no device before it, and a device named twice.
std::vector<DeviceUri> parse_device_list(const std::string& text);

}  // namespace regime
