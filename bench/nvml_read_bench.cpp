// Cost of the NVML backend's sampling path (read, energy counter, power-buffer drain, reason
// counters) and of a check of the GPUs a job uses (process lists, the process tree). Runs against
// whatever REGIME_NVML_LIBRARY names: the fake NVML in CI (measures Regime's own overhead plus the
// fake's state-file reads), the real libnvidia-ml on a GPU host.
//   REGIME_NVML_LIBRARY=build/ci/tests/fake_nvml/libnvidia-ml-fake.so
//   FAKE_NVML_CONFIG=tests/fake_nvml/example_config.json build/ci/nvml_read_bench
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <iostream>

#include "device/nvml/nvml_gpu.hpp"
#include "run/process_tree.hpp"

namespace {

regime::nvml::NvmlGpu& gpu() {
  static regime::nvml::NvmlGpu g(regime::nvml::NvmlLibrary::shared(), 0);
  return g;
}

void BM_Read(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu().read());
}
BENCHMARK(BM_Read)->Unit(benchmark::kMicrosecond);

void BM_ReadEnergy(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu().read_energy_J());
}
BENCHMARK(BM_ReadEnergy)->Unit(benchmark::kMicrosecond);

void BM_DrainPowerPoints(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu().drain_power_points());
}
BENCHMARK(BM_DrainPowerPoints)->Unit(benchmark::kMicrosecond);

void BM_ReadReasonTimes(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu().read_reason_times());
}
BENCHMARK(BM_ReadReasonTimes)->Unit(benchmark::kMicrosecond);

// What one check of a job's GPUs costs (JobProcessWatch, every 2 s while a job runs): the
// driver's process list of a GPU, and this machine's process tree from /proc.
void BM_ComputePids(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gpu().compute_pids());
}
BENCHMARK(BM_ComputePids)->Unit(benchmark::kMicrosecond);

// The tree of this process (a job's tree is a few processes): the kernel's children lists where
// it keeps them, else every process's parent (what the whole machine's tree, PID 1, costs).
void BM_ProcessTree(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(regime::process_tree(::getpid()));
}
void BM_ProcessTreeByEveryParent(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(regime::descendants_of(::getpid(), regime::read_parent_pids()));
}
BENCHMARK(BM_ProcessTree)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ProcessTreeByEveryParent)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  try {
    gpu();
  } catch (const std::exception& e) {
    std::cerr << "nvml_read_bench: " << e.what() << "\n";
    return 5;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
