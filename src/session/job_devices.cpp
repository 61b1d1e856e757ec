#include "session/job_devices.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "common/error.hpp"
#include "device/cuda_devices.hpp"
#include "device/registry.hpp"

namespace regime::session {

namespace {

std::vector<GpuInfo> every_nvml_gpu() {
  std::vector<GpuInfo> out;
  for (auto& g : open_devices("nvml:all")) out.push_back(g->info());
  return out;
}

std::string join_devices(const std::vector<int>& indices) {
  std::string out;
  for (int i : indices) out += (out.empty() ? "" : ",") + fmt::format("nvml:{}", i);
  return out;
}

CudaDeviceMap job_map(const WorkloadSpec& spec, const std::vector<GpuInfo>& all) {
  return map_cuda_visible_devices(command_env(spec.command, "CUDA_VISIBLE_DEVICES"),
                                  command_env(spec.command, "CUDA_DEVICE_ORDER"), all);
}

}  // namespace

std::optional<std::string> command_env(const std::vector<std::string>& command,
                                       const std::string& var) {
  std::optional<std::string> value;
  if (const char* v = std::getenv(var.c_str())) value = v;
  if (command.empty() || (command[0] != "env" && command[0] != "/usr/bin/env")) return value;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-i" || a == "--ignore-environment") {
      value.reset();
    } else if (a == "-u" && i + 1 < command.size()) {
      if (command[++i] == var) value.reset();
    } else if (auto eq = a.find('='); eq != std::string::npos && a[0] != '-') {
      if (a.substr(0, eq) == var) value = a.substr(eq + 1);
    } else {
      break;  // the command itself
    }
  }
  return value;
}

bool runs_as_job(const std::string& device) {
  return device == "nvml:job" || names_several(device);
}

std::string resolve_job_device(const std::string& device, const WorkloadSpec& spec) {
  if (device != "nvml:job") return device;
  if (spec.command.empty())
    throw Error(ErrorKind::InvalidArgument,
                "--device nvml:job takes the GPUs of a command's CUDA_VISIBLE_DEVICES: give the "
                "command after --");
  CudaDeviceMap m = job_map(spec, every_nvml_gpu());
  if (m.nvml_indices.empty())
    throw Error(ErrorKind::NotFound,
                fmt::format("--device nvml:job: the command sees no GPU (CUDA_VISIBLE_DEVICES={})",
                            command_env(spec.command, "CUDA_VISIBLE_DEVICES").value_or("unset")));
  return join_devices(m.nvml_indices);
}

nlohmann::json job_devices_json(const std::vector<GpuInfo>& measured, const WorkloadSpec& spec) {
  if (spec.command.empty()) return nullptr;
  const std::vector<GpuInfo> all = every_nvml_gpu();
  CudaDeviceMap m = job_map(spec, all);
  std::vector<int> measured_ix;
  for (const GpuInfo& g : measured) measured_ix.push_back(g.index);
  std::vector<int> unused, unmeasured;
  for (int i : measured_ix)
    if (std::find(m.nvml_indices.begin(), m.nvml_indices.end(), i) == m.nvml_indices.end())
      unused.push_back(i);
  for (int i : m.nvml_indices)
    if (std::find(measured_ix.begin(), measured_ix.end(), i) == measured_ix.end())
      unmeasured.push_back(i);
  const auto visible = command_env(spec.command, "CUDA_VISIBLE_DEVICES");
  std::vector<std::string> warnings = m.warnings;
  const bool match = unused.empty() && unmeasured.empty();
  if (!match) {
    std::string what = fmt::format(
        "--device measures {} but the job sees {} (CUDA_VISIBLE_DEVICES={}, by PCI bus id)",
        join_devices(measured_ix), m.nvml_indices.empty() ? "no GPU" : join_devices(m.nvml_indices),
        visible ? "'" + *visible + "'" : "unset");
    if (!unused.empty())
      what += fmt::format("; {} measured but not used by the job", join_devices(unused));
    if (!unmeasured.empty())
      what += fmt::format("; {} used but not measured", join_devices(unmeasured));
    warnings.push_back("warning: " + what + " (--device nvml:job measures the job's own)");
  }
  std::vector<std::string> job;
  for (int i : m.nvml_indices) job.push_back(fmt::format("nvml:{}", i));
  std::vector<std::string> meas;
  for (int i : measured_ix) meas.push_back(fmt::format("nvml:{}", i));
  return {{"cuda_visible_devices", visible ? nlohmann::json(*visible) : nlohmann::json(nullptr)},
          {"cuda_device_order",
           command_env(spec.command, "CUDA_DEVICE_ORDER").value_or("FASTEST_FIRST (unset)")},
          {"job_gpus", job},
          {"measured", meas},
          {"exact", m.exact},
          {"match", match},
          {"warnings", warnings}};
}

}  // namespace regime::session
