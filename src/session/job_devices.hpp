#pragma once
// Which GPUs a job uses, found from the job's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (as the
// command will get them: regime's environment, or an `env VAR=... cmd` prefix of the command)
// mapped to NVML GPUs by PCI bus id or UUID (device/cuda_devices.hpp), and checked against the
// GPUs --device names. `--device nvml:job` measures exactly the job's GPUs.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "session/target.hpp"

namespace regime::session {

// The value `var` will have in the command's environment: set or unset by a leading
// `env [-u NAME] [NAME=VALUE]... cmd`, else regime's own.
std::optional<std::string> command_env(const std::vector<std::string>& command,
                                       const std::string& var);

// "nvml:job": the NVML GPUs the command will see, in CUDA's order ("nvml:2,nvml:0"); any other
// device list unchanged. Error NotFound when the job sees no GPU.
std::string resolve_job_device(const std::string& device, const WorkloadSpec& spec);

// True for a --device that makes a job of several GPUs or asks for the job's own (nvml:job).
bool runs_as_job(const std::string& device);

// What the job uses against what is measured: {"cuda_visible_devices", "cuda_device_order",
// "job_gpus", "measured", "exact", "match", "warnings"}; null for a built-in (simulated) workload.
// A mismatch is a warning naming both sides.
nlohmann::json job_devices_json(const std::vector<GpuInfo>& measured, const WorkloadSpec& spec);

}  // namespace regime::session
