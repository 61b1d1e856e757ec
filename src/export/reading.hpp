#pragma once
// One round of reads of a GPU for the exporter: only the read methods of the Gpu interface, so the
// exporter can never change a limit.
#include <optional>
#include <vector>

#include "common/gpu_info.hpp"
#include "device/gpu.hpp"
#include "trace/trace.hpp"

namespace regime::exporter {

struct GpuReading {
  GpuInfo info;   // identity and the five limits
  Sample sample;  // the cheap fields, energy_J filled from the counter where the device has one
  std::optional<ReasonTimes> reason_times;
  std::vector<PowerPoint> power_points;  // the driver's buffer since the last round
  long failed_reads = 0;  // reads the device gave up on during this round (fields left empty)
  double read_s = 0;      // how long the round took, wall time
};

// Reads info, the cheap fields, the energy counter, the reason counters and the power buffer.
// `health_before` is the device's read_health() after the previous round. Throws what the
// device throws (Error GpuLost for a GPU that stopped answering).
GpuReading read_gpu(Gpu& gpu, const ReadHealth& health_before);

}  // namespace regime::exporter
