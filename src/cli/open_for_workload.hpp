#pragma once
// Opening the device a workload will run on, shared by the commands that run one (probe, study).
#include <string>

#include "device/gpu.hpp"

namespace regime::cli {

// Opens exactly one GPU; a simulated device cannot run a real command (Error InvalidArgument
// saying what to do instead).
GpuPtr open_for_workload(const std::string& device, bool has_command);

}  // namespace regime::cli
