// The exporter's --listen address (src/export/listen_address.cpp): HOST:PORT, [V6]:PORT.
#include "export/listen_address.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  regime::fuzz::expect_clean([&] {
    const auto a =
        regime::exporter::parse_listen_address(std::string(regime::fuzz::text_of(data, size)));
    // What was accepted prints back to the same address.
    const auto again = regime::exporter::parse_listen_address(a.to_string());
    if (again.host != a.host || again.port != a.port) __builtin_trap();
    regime::exporter::is_loopback(a.host);
  });
  return 0;
}
