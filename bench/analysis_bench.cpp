// Analysis benchmarks (docs/analysis.md "Performance"):
//   cmake --build --preset ci --target analysis_bench && ./build/ci/analysis_bench
// A 1M-row synthetic trace (10 000 s at 100 Hz, 100 000 steps) and the largest real H200 trace.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "support/synthetic_trace.hpp"
#include "trace/csv.hpp"

namespace {

using namespace regime;

const Trace& million_row_trace() {
  static const Trace trace = [] {
    synthetic::Spec spec;
    spec.seconds = 10000;  // 1 000 001 samples at 10 ms, 100 000 steps of 100 ms
    spec.noise_W = 20;
    return synthetic::make(spec);
  }();
  return trace;
}

std::filesystem::path million_row_file() {
  static const std::filesystem::path path = [] {
    auto p = std::filesystem::temp_directory_path() / "regime_bench_1M.trace.csv";
    write_trace_csv(p, million_row_trace().samples);
    write_steps_csv(*sibling_steps_path(p), million_row_trace().steps);
    return p;
  }();
  return path;
}

// The largest real trace; REGIME_BENCH_TRACE overrides (default: the real H200 trace in
// tests/data).
std::filesystem::path h200_trace() {
  if (const char* env = std::getenv("REGIME_BENCH_TRACE")) return env;
  return std::filesystem::path(__FILE__).parent_path() / "../tests/data/h200/resnet50.trace.csv";
}

void BM_ParseTrace1M(benchmark::State& state) {
  const std::string text = format_trace_csv(million_row_trace().samples);
  for (auto _ : state) benchmark::DoNotOptimize(parse_trace_csv(text, "mem"));
  state.SetItemsProcessed(state.iterations() * 1000001);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseTrace1M)->Unit(benchmark::kMillisecond);

void BM_LoadTraceFile1M(benchmark::State& state) {
  const auto path = million_row_file();
  for (auto _ : state) benchmark::DoNotOptimize(load_trace(path, sibling_steps_path(path)));
  state.SetItemsProcessed(state.iterations() * 1000001);
}
BENCHMARK(BM_LoadTraceFile1M)->Unit(benchmark::kMillisecond);

void BM_WriteTrace1M(benchmark::State& state) {
  const auto path = std::filesystem::temp_directory_path() / "regime_bench_write.trace.csv";
  for (auto _ : state) write_trace_csv(path, million_row_trace().samples);
  state.SetItemsProcessed(state.iterations() * 1000001);
  std::filesystem::remove(path);
}
BENCHMARK(BM_WriteTrace1M)->Unit(benchmark::kMillisecond);

void BM_MeasureClassify1M(benchmark::State& state) {
  const Trace& t = million_row_trace();
  for (auto _ : state) benchmark::DoNotOptimize(classify(measure(t), infer_gpu_info(t)));
  state.SetItemsProcessed(state.iterations() * 1000001);
}
BENCHMARK(BM_MeasureClassify1M)->Unit(benchmark::kMillisecond);

void BM_LoadMeasureClassify1M(benchmark::State& state) {
  const auto path = million_row_file();
  for (auto _ : state) {
    const Trace t = load_trace(path, sibling_steps_path(path));
    benchmark::DoNotOptimize(classify(measure(t), infer_gpu_info(t)));
  }
}
BENCHMARK(BM_LoadMeasureClassify1M)->Unit(benchmark::kMillisecond);

void BM_LoadMeasureClassifyH200Resnet50(benchmark::State& state) {
  const auto path = h200_trace();
  for (auto _ : state) {
    const Trace t = load_trace(path, sibling_steps_path(path));
    benchmark::DoNotOptimize(classify(measure(t), infer_gpu_info(t)));
  }
}
BENCHMARK(BM_LoadMeasureClassifyH200Resnet50)->Unit(benchmark::kMillisecond);

void BM_StreamingAppend(benchmark::State& state) {
  const auto path = std::filesystem::temp_directory_path() / "regime_bench_append.trace.csv";
  TraceCsvWriter w(path);
  const Sample s = million_row_trace().samples[12345];
  for (auto _ : state) w.append(s);
  w.close();
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove(path);
}
BENCHMARK(BM_StreamingAppend);

}  // namespace

BENCHMARK_MAIN();
