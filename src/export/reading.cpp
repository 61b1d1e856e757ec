#include "export/reading.hpp"

#include <chrono>

namespace regime::exporter {

GpuReading read_gpu(Gpu& gpu, const ReadHealth& health_before) {
  const auto t0 = std::chrono::steady_clock::now();
  GpuReading r;
  r.info = gpu.info();
  r.sample = gpu.read();
  r.sample.energy_J = gpu.read_energy_J();
  r.reason_times = gpu.read_reason_times();
  r.power_points = gpu.drain_power_points();
  r.failed_reads = gpu.read_health().failed_reads - health_before.failed_reads;
  r.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace regime::exporter
