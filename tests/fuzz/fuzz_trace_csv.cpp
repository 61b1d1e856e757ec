// Trace, steps and power-point CSV readers (src/trace/csv.cpp). The first byte picks the
// format, the rest is the file.
#include "harness.hpp"
#include "trace/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text = regime::fuzz::text_of(data + 1, size - 1);
  regime::fuzz::expect_clean([&] {
    switch (data[0] % 3) {
      case 0:
        regime::parse_trace_csv(text, "fuzz.trace.csv");
        break;
      case 1:
        regime::parse_steps_csv(text, "fuzz.steps.csv");
        break;
      default:
        regime::parse_power_csv(text, "fuzz.power.csv");
    }
  });
  return 0;
}
