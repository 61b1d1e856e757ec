#include "device/cuda_devices.hpp"

#include <algorithm>
#include <numeric>

namespace regime {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

CudaDeviceMap map_cuda_visible_devices(const std::optional<std::string>& visible,
                                       const std::optional<std::string>& order,
                                       const std::vector<GpuInfo>& gpus) {
  CudaDeviceMap out;
  // Doubts about CUDA's order matter only where the job names GPUs by index.
  std::vector<std::string> order_doubts;
  // CUDA's enumeration of every GPU: PCI bus order (bus ids compare as text: fixed-width hex).
  std::vector<size_t> cuda(gpus.size());
  std::iota(cuda.begin(), cuda.end(), 0);
  const bool have_pci =
      std::all_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) { return !g.pci_bus_id.empty(); });
  if (have_pci) {
    std::stable_sort(cuda.begin(), cuda.end(), [&](size_t a, size_t b) {
      return lower(gpus[a].pci_bus_id) < lower(gpus[b].pci_bus_id);
    });
  } else if (gpus.size() > 1) {
    order_doubts.push_back(
        "NVML gave no PCI bus id for every GPU: CUDA's numbering is taken to be NVML's, which "
        "need not hold; name the GPUs by UUID in CUDA_VISIBLE_DEVICES");
  }
  const bool pci_order = order && trim(*order) == "PCI_BUS_ID";
  if (!pci_order && gpus.size() > 1) {
    const bool one_model = std::all_of(gpus.begin(), gpus.end(),
                                       [&](const GpuInfo& g) { return g.name == gpus[0].name; });
    if (!one_model) {
      order_doubts.push_back(
          "the GPUs are of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers "
          "the fastest first by its own rule, taken here to be PCI order; set "
          "CUDA_DEVICE_ORDER=PCI_BUS_ID or name the GPUs by UUID");
    }
  }
  auto doubt_order = [&] {
    out.exact = order_doubts.empty();
    out.warnings.insert(out.warnings.begin(), order_doubts.begin(), order_doubts.end());
  };
  if (!visible) {
    for (size_t i : cuda) out.nvml_indices.push_back(gpus[i].index);
    doubt_order();
    return out;
  }
  std::string rest = *visible;
  std::vector<int> picked;
  bool uses_index = false;
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string entry =
        trim(rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    std::optional<int> found;
    if (is_index(entry)) {
      size_t k = std::stoul(entry);
      if (k < cuda.size()) found = gpus[cuda[k]].index;
      uses_index = true;
    } else if (entry.rfind("GPU-", 0) == 0 || entry.rfind("gpu-", 0) == 0) {
      int matches = 0;
      for (const GpuInfo& g : gpus)
        if (lower(g.uuid).rfind(lower(entry), 0) == 0) {
          found = g.index;
          ++matches;
        }
      if (matches > 1) {
        out.warnings.push_back("CUDA_VISIBLE_DEVICES entry '" + entry +
                               "' matches several GPUs' UUIDs: CUDA stops at it");
        found.reset();
      }
    } else if (entry.rfind("MIG-", 0) == 0) {
      out.warnings.push_back("CUDA_VISIBLE_DEVICES entry '" + entry +
                             "' is a MIG instance: regime measures whole GPUs and stops at it");
    }
    if (!found) {
      if (!entry.empty() && entry.rfind("MIG-", 0) != 0)
        out.warnings.push_back("CUDA_VISIBLE_DEVICES entry '" + entry +
                               "' names no GPU: CUDA ignores it and every entry after it");
      break;
    }
    if (std::find(picked.begin(), picked.end(), *found) != picked.end()) {
      out.warnings.push_back("CUDA_VISIBLE_DEVICES='" + *visible +
                             "' names a GPU twice: CUDA then sees no GPU at all");
      picked.clear();
      break;
    }
    picked.push_back(*found);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (uses_index) doubt_order();
  out.nvml_indices = picked;
  return out;
}

}  // namespace regime
