#pragma once
// Device URIs: nvml:0, nvml:all, nvml:GPU-<uuid>, nvml:<PCI bus id>, sim:MODEL[,key=value...],
// replay:FILE. A GPU by UUID or PCI bus id is named as `nvidia-smi -i` takes it.
#include <map>
#include <optional>
#include <string>

namespace regime {

// A PCI address: domain, bus, device, function. Written in many ways ("0000:3b:00.0",
// "00000000:3B:00.0", "3b:00.0"); compared by value.
struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  bool operator==(const PciAddress&) const = default;
};
// nullopt when `text` is not [DOMAIN:]BUS:DEVICE.FUNCTION in hexadecimal.
std::optional<PciAddress> parse_pci_address(const std::string& text);

struct DeviceUri {
  std::string text;                           // as the user wrote it
  std::string scheme;                         // "nvml", "sim", "replay"
  std::string target;                         // "0", "all", a model name, or a file path
  std::map<std::string, std::string> params;  // sim:t4,ambient_C=35 -> {"ambient_C": "35"}

  bool all() const { return target == "all"; }
  // The GPU index for nvml:N; nullopt for "all".
  std::optional<int> index() const;
  // nvml:GPU-... : the GPU's UUID as NVML reports it.
  std::optional<std::string> uuid() const;
  // nvml:0000:3b:00.0, nvml:3b:00.0 (domain 0), nvml:00000000:3B:00.0: the GPU's PCI address.
  std::optional<struct PciAddress> pci_address() const;
  // A numeric parameter, or `fallback`; Error InvalidArgument if present but not a number.
  double param_or(const std::string& key, double fallback) const;
};

// Error InvalidArgument with a message that shows the accepted forms.
DeviceUri parse_device_uri(const std::string& text);

// nvml:INDEX, for a GPU found by index rather than named by the user.
DeviceUri nvml_device(int index);

}  // namespace regime
