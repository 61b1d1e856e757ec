#pragma once
// Which NVML GPUs a CUDA job sees. NVML numbers GPUs its own way; CUDA numbers the GPUs it may see
// (CUDA_VISIBLE_DEVICES) in CUDA_DEVICE_ORDER: PCI_BUS_ID is PCI bus order, the default
// FASTEST_FIRST puts the fastest model first and orders equal ones by PCI bus id. So the mapping
// goes through the PCI bus id (or the UUID when the job names GPUs by UUID), never through NVML's
// index. What CUDA calls "fastest" is its own heuristic: on a node of one GPU model both orders
// are PCI order and the mapping is exact; with mixed models under FASTEST_FIRST it is a guess, and
// says so (the fix: CUDA_DEVICE_ORDER=PCI_BUS_ID or UUIDs in CUDA_VISIBLE_DEVICES).
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"

namespace regime {

struct CudaDeviceMap {
  std::vector<int> nvml_indices;      // NVML index of cuda:0, cuda:1, ... as the job sees them
  bool exact = true;                  // false: the order rests on a guess (see warnings)
  std::vector<std::string> warnings;  // in words, naming what to set
};

// `visible`: CUDA_VISIBLE_DEVICES as the job gets it (nullopt: unset, every GPU); `order`:
// CUDA_DEVICE_ORDER (nullopt: FASTEST_FIRST). `gpus`: every GPU NVML reports. As CUDA does,
// entries are indices or UUIDs (GPU-..., a unique prefix is enough), parsing stops at the first
// entry that names no GPU, and a GPU named twice makes the list invalid (no GPU at all).
CudaDeviceMap map_cuda_visible_devices(const std::optional<std::string>& visible,
                                       const std::optional<std::string>& order,
                                       const std::vector<GpuInfo>& gpus);

}  // namespace regime
