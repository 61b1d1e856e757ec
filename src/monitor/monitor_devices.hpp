#pragma once
// The GPU a monitor samples: any URI `regime probe --device` takes, and two that a script needs.
// cuda:N is the GPU CUDA calls N in this process (CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER
// mapped by PCI bus id or UUID, the rule of `--device nvml:job`), so a monitor under torchrun or
// Slurm watches the card the script computes on. sim:MODEL is a simulated GPU kept level with the
// wall clock, busy with a built-in training workload, so the monitor can be tried with no GPU.
#include <string>
#include <vector>

#include "device/gpu.hpp"

namespace regime::monitor {

// The built-in workload a sim: GPU of the monitor runs (the script's own work never reaches it).
inline constexpr const char* kSimMonitorWorkload = "resnet50";

// "nvml:K" of each GPU this process sees, in CUDA's order (cuda:0 first).
std::vector<std::string> cuda_device_uris();
// "nvml:K" for CUDA's GPU `cuda_index` as this process sees it. Error NotFound when the process
// sees fewer GPUs (naming CUDA_VISIBLE_DEVICES); the NVML backend's errors otherwise.
std::string cuda_device_uri(int cuda_index);

// Opens the device, cuda:N and sim:MODEL as above. Error InvalidArgument for a malformed cuda:N.
GpuPtr open_monitor_device(const std::string& uri);

}  // namespace regime::monitor
