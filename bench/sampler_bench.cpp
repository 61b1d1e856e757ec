// The sampler's own cost. BM_LoopTick: CPU time and heap allocations of one tick of the run loop
// (read, stamp, store, step poll, scheduling) with an in-memory GPU on a simulated clock.
// BM_Sampler100HzWall: a real 100 Hz sampler on the wall clock for 3 s, its process CPU time
// (getrusage, all threads) as a share of one core: the target is under 1%. The "full" variant adds
// what `regime probe` adds: streaming the trace CSV and a command with the step-marker listener.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "run/process_workload.hpp"
#include "run/run_loop.hpp"
#include "run/wall_clock.hpp"
#include "support/test_gpu.hpp"
#include "trace/csv.hpp"

// Every heap allocation of this program is counted, to show that a tick allocates nothing. (GCC
// pairs the replaced operators with malloc/free only after inlining and then warns wrongly.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
std::atomic<long> g_allocations{0};

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using regime::RunOptions;
using regime::RunStats;

void BM_LoopTick(benchmark::State& state) {
  long ticks = 0;
  long allocations = 0;
  for (auto _ : state) {
    regime::testing::FakeClock clock;
    regime::testing::TestGpu gpu(clock, 600);
    // Steps every 10 s: the test workload's own step vectors do not blur the loop's count.
    regime::testing::TestWorkload work(clock, 10, 0);
    RunOptions o;
    o.duration_s = 600;  // 60 000 ticks of simulated time
    RunStats stats;
    long before = g_allocations.load();
    auto trace = regime::run(gpu, work, o, clock, &stats);
    allocations += g_allocations.load() - before;
    benchmark::DoNotOptimize(trace.samples.data());
    ticks += stats.ticks;
  }
  state.SetItemsProcessed(ticks);
  // Whole runs: setup, the reserved sample vector, one drain a second and the steps included.
  state.counters["allocations_per_tick"] =
      static_cast<double>(allocations) / static_cast<double>(ticks);
  state.counters["ns_per_tick"] = benchmark::Counter(
      static_cast<double>(ticks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LoopTick)->Unit(benchmark::kMillisecond);

void BM_Sampler100HzWall(benchmark::State& state) {
  bool full = state.range(0) != 0;
  std::filesystem::path csv = std::filesystem::temp_directory_path() /
                              ("sampler_bench_" + std::to_string(::getpid()) + ".csv");
  for (auto _ : state) {
    regime::WallClock wall;
    regime::testing::TestGpu gpu(wall, 600);
    RunOptions o;
    o.duration_s = 3;
    o.sample_period_s = 0.01;
    RunStats stats;
    if (full) {
      regime::TraceCsvWriter writer(csv);
      o.on_sample = [&](const regime::Sample& s) { writer.append(s); };
      regime::ProcessOptions p;
      p.argv = {"sleep", "10"};
      regime::ProcessWorkload work(p, wall);
      regime::run(gpu, work, o, wall, &stats);
      writer.close();
    } else {
      regime::testing::TestWorkload work(wall, 0.1, 0);
      regime::run(gpu, work, o, wall, &stats);
    }
    state.SetIterationTime(stats.wall_s);
    state.counters["cpu_pct_of_one_core"] = 100.0 * stats.cpu_s / stats.wall_s;
    state.counters["ticks"] = static_cast<double>(stats.ticks);
  }
  std::filesystem::remove(csv);
}
BENCHMARK(BM_Sampler100HzWall)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("full")
    ->Iterations(1)
    ->Repetitions(3)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// The same whole loop (ProcessWorkload, CSV writer) waking every `period_ms`: what the wake rate
// costs on its own, the reads being microseconds.
void BM_SamplerWallByPeriod(benchmark::State& state) {
  std::filesystem::path csv = std::filesystem::temp_directory_path() /
                              ("sampler_bench_p_" + std::to_string(::getpid()) + ".csv");
  for (auto _ : state) {
    regime::WallClock wall;
    regime::testing::TestGpu gpu(wall, 600);
    RunOptions o;
    o.duration_s = 5;
    o.sample_period_s = static_cast<double>(state.range(0)) / 1000.0;
    RunStats stats;
    regime::TraceCsvWriter writer(csv);
    o.on_sample = [&](const regime::Sample& s) { writer.append(s); };
    regime::ProcessOptions p;
    p.argv = {"sleep", "10"};
    regime::ProcessWorkload work(p, wall);
    regime::run(gpu, work, o, wall, &stats);
    writer.close();
    state.SetIterationTime(stats.wall_s);
    state.counters["cpu_pct_of_one_core"] = 100.0 * stats.cpu_s / stats.wall_s;
    state.counters["ticks"] = static_cast<double>(stats.ticks);
  }
  std::filesystem::remove(csv);
}
BENCHMARK(BM_SamplerWallByPeriod)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->ArgName("period_ms")
    ->Iterations(1)
    ->Repetitions(3)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
