#pragma once
// sim:MODEL[,k=v...] as a device: opened as a Gpu for the device registry (`regime devices`,
// `regime limit`), or as a SimGpu where a run needs its clock and its built-in workloads.
#include <memory>

#include "device/registry.hpp"
#include "device/uri.hpp"
#include "sim/sim_gpu.hpp"

namespace regime::sim {

// Error NotFound for an unknown model; InvalidArgument for a malformed option.
std::unique_ptr<SimGpu> open_sim_gpu(const DeviceUri& uri);
std::unique_ptr<SimGpu> open_sim_gpu(const std::string& uri);

// The "sim" backend for the device registry.
Backend backend();

}  // namespace regime::sim
