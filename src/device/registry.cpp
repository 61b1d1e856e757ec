#include "device/registry.hpp"

#include <algorithm>
#include <map>

#include "common/error.hpp"

namespace regime {

namespace {
std::map<std::string, Backend>& backend_registry() {
  static std::map<std::string, Backend> r;
  return r;
}
}  // namespace

void register_backend(Backend backend) {
  std::string scheme = backend.scheme;
  backend_registry()[scheme] = std::move(backend);
}

std::vector<Backend> registered_backends() {
  std::vector<Backend> out;
  for (auto& [_, b] : backend_registry()) out.push_back(b);
  return out;
}

std::vector<GpuPtr> open_devices(const std::string& text) {
  DeviceUri uri = parse_device_uri(text);
  auto it = backend_registry().find(uri.scheme);
  if (it == backend_registry().end())
    throw Error(ErrorKind::InvalidArgument, "no backend for device scheme '" + uri.scheme + "'");
  return it->second.open(uri);
}

GpuPtr open_device(const std::string& text) {
  auto gpus = open_devices(text);
  if (gpus.size() != 1)
    throw Error(ErrorKind::InvalidArgument, "device '" + text + "' names " +
                                                std::to_string(gpus.size()) +
                                                " GPUs; this command takes one (e.g. nvml:0)");
  return std::move(gpus.front());
}

}  // namespace regime
