// Sweep tables (src/trace/sweep_table.cpp): recommend, replay: and sim fit read them.
#include "harness.hpp"
#include "trace/sweep_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  regime::fuzz::expect_clean([&] {
    regime::SweepTable t = regime::parse_sweep_table(regime::fuzz::text_of(data, size), "fuzz.csv");
    for (const auto& w : t.workloads()) t.rows_for(w);
    regime::format_sweep_table(t.rows);
  });
  return 0;
}
