// GPU spec files (data/gpus/*.json, src/twin/spec.cpp).
#include "harness.hpp"
#include "twin/spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  regime::fuzz::expect_clean([&] {
    regime::twin::parse_gpu_spec(std::string(regime::fuzz::text_of(data, size)), "fuzz.json");
  });
  return 0;
}
