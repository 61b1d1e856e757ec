// Device URIs (src/device/uri.cpp): nvml:0,1, sim:MODEL,k=v,..., replay:FILE.
#include "device/uri.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  regime::fuzz::expect_clean([&] {
    regime::DeviceUri u = regime::parse_device_uri(std::string(regime::fuzz::text_of(data, size)));
    u.all();
    if (u.scheme == "nvml") u.index();
    for (const auto& [k, v] : u.params) u.param_or(k, 0);
  });
  return 0;
}
