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

std::vector<GpuPtr> open_devices(const DeviceUri& uri) {
  auto it = backend_registry().find(uri.scheme);
  if (it == backend_registry().end())
    throw Error(ErrorKind::InvalidArgument, "no backend for device scheme '" + uri.scheme + "'");
  return it->second.open(uri);
}

std::vector<GpuPtr> open_devices(const std::string& text) {
  return open_devices(parse_device_uri(text));
}

GpuPtr open_device(const DeviceUri& uri) {
  auto gpus = open_devices(uri);
  if (gpus.size() != 1)
    throw Error(ErrorKind::InvalidArgument, "device '" + uri.text + "' names " +
                                                std::to_string(gpus.size()) +
                                                " GPUs; this command takes one (e.g. nvml:0)");
  return std::move(gpus.front());
}

GpuPtr open_device(const std::string& text) { return open_device(parse_device_uri(text)); }

}  // namespace regime
