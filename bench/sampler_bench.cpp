// The sampler's own cost. BM_LoopTick: CPU time of one tick of the run loop (read, stamp, store,
// step poll, scheduling) with an in-memory GPU on a simulated clock. BM_Sampler100HzWall: a real
// 100 Hz sampler on the wall clock for 3 s, its process CPU time (getrusage, all threads) as a
// share of one core: the target is under 1%. The "full" variant adds what `regime probe` adds:
// streaming the trace CSV and a command with the step-marker listener.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>

#include "run/process_workload.hpp"
#include "run/run_loop.hpp"
#include "run/test_gpu.hpp"
#include "run/wall_clock.hpp"
#include "trace/csv.hpp"

namespace {

using regime::RunOptions;
using regime::RunStats;

void BM_LoopTick(benchmark::State& state) {
  long ticks = 0;
  for (auto _ : state) {
    regime::testing::FakeClock clock;
    regime::testing::TestGpu gpu(clock, 600);
    regime::testing::TestWorkload work(clock, 0.05, 0);
    RunOptions o;
    o.duration_s = 600;  // 60 000 ticks of simulated time
    RunStats stats;
    auto trace = regime::run(gpu, work, o, clock, &stats);
    benchmark::DoNotOptimize(trace.samples.data());
    ticks += stats.ticks;
  }
  state.SetItemsProcessed(ticks);
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
    regime::testing::TestGpu gpu(wall, 600, false);
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

}  // namespace

BENCHMARK_MAIN();
