// Twin speed: simulated 10 ms ticks per second on one core, and `sim curve` time per point.
#include <benchmark/benchmark.h>

#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"

namespace {

using namespace regime;

// One iteration = 1000 ticks (10 simulated seconds) of a cap-bound H200 running gemm, with noise.
void BM_SimTicks(benchmark::State& state) {
  sim::SimGpu gpu(twin::load_gpu_spec("h200"), sim::SimOptions{}, "sim:h200");
  auto work = sim::make_sim_workload("gemm", gpu);
  work->start(0);
  double t = 0;
  for (auto _ : state) {
    t += 1000 * sim::kTick_s;
    gpu.advance_to(t);
    benchmark::DoNotOptimize(gpu.true_power_W());
    work->poll_steps();
  }
  state.counters["ticks_per_s"] = benchmark::Counter(
      1000.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimTicks);

// One iteration = one steady-state point (what `sim curve` computes per cap).
void BM_SteadyStatePoint(benchmark::State& state) {
  twin::GpuSpec gpu = twin::load_gpu_spec("t4");
  twin::WorkloadParams w = twin::workload_on(twin::sim_workload_profile("resnet50"), gpu);
  double cap = 60;
  for (auto _ : state) {
    benchmark::DoNotOptimize(twin::steady_state(gpu, w, cap));
    cap = cap >= 70 ? 60 : cap + 0.5;
  }
}
BENCHMARK(BM_SteadyStatePoint);

}  // namespace

BENCHMARK_MAIN();
