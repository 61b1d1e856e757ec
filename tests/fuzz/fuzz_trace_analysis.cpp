// A trace that parses goes through the whole analysis (steady state, energy sources, bootstrap
// intervals, the regime rules): a value in a file must not make it allocate or loop by its
// size (one far timestamp once asked for 2e7 steady-state blocks).
#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "harness.hpp"
#include "trace/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = regime::fuzz::text_of(data, size);
  // Steps follow the samples after a line "--": both files of one run.
  size_t cut = text.find("\n--\n");
  regime::fuzz::expect_clean([&] {
    regime::Trace trace;
    trace.samples = regime::parse_trace_csv(text.substr(0, cut), "fuzz.trace.csv");
    if (cut != std::string_view::npos)
      trace.steps = regime::parse_steps_csv(text.substr(cut + 4), "fuzz.steps.csv");
    regime::MeasureOptions opts;
    opts.bootstrap.resamples = 200;
    regime::Measurement m = regime::measure(trace, opts);
    regime::GpuInfo gpu;
    gpu.min_limit_W = 100;
    gpu.max_limit_W = gpu.default_limit_W = gpu.current_limit_W = gpu.enforced_limit_W = 300;
    regime::classify(m, gpu);
  });
  return 0;
}
