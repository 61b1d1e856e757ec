#pragma once
// The narrow hardware interface every backend implements (nvml, sim). Reads are split by
// cost: read() returns the cheap fields (about 1 us each on an H200); the cumulative energy counter
// costs about 4 ms and is read separately, at window edges and about once a second.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime {

// Exact time spent under each clocks-event reason since an arbitrary origin (NVML field values
// NVML_FI_DEV_CLOCKS_EVENT_REASON_*), in seconds. Differences between two reads are what count.
struct ReasonTimes {
  // key: reason bit (reason::kSwPowerCap, ...), or the OR of several bits for a counter that
  // covers them together (NVML's thermal perf policy: kSwThermal | kHwThermal).
  std::map<uint64_t, double> seconds_by_reason;
};

// How reads went: a driver under load answers some reads with a transient error (NVML's
// TIMEOUT or UNKNOWN). Such a read is retried; one that kept failing leaves its field empty in
// that sample. Counts since the device was opened.
struct ReadHealth {
  long retried_reads = 0;  // transient errors answered by trying again
  long failed_reads = 0;   // reads given up after the retries (the field is missing that time)
};

class Gpu {
 public:
  virtual ~Gpu() = default;

  // Identity and current limits (re-read each call: limits can change under us).
  virtual GpuInfo info() = 0;

  // One sample of the cheap fields; energy_J is left empty.
  virtual Sample read() = 0;

  // The cumulative energy counter in joules, if the device has one.
  virtual std::optional<double> read_energy_J() = 0;

  // Power points buffered by the driver since the last call (empty where unsupported).
  virtual std::vector<PowerPoint> drain_power_points() { return {}; }

  // Time-in-reason counters, if supported.
  virtual std::optional<ReasonTimes> read_reason_times() { return std::nullopt; }

  // The processes that hold a compute context on the GPU (PIDs in the host's PID namespace), as
  // the driver lists them; nullopt where it cannot tell (no such call, a simulated GPU). What a
  // job uses is found from this where its CUDA_VISIBLE_DEVICES does not say.
  virtual std::optional<std::vector<int>> compute_pids() { return std::nullopt; }

  // Validates against [min, max] (Error OutOfRange naming the range), sets the limit and returns
  // the enforced limit read back. Backends do not consult the actuation policy: callers go through
  // PowerLimitGuard (src/act/), which does.
  virtual double set_power_limit(double watts) = 0;

  // True for a physical GPU (nvml): changing it needs --actuate and is blocked by REGIME_READ_ONLY.
  virtual bool is_physical() const = 0;

  // True when limit changes go to the node agent (regimed), which journals and restores them
  // itself: PowerLimitGuard then keeps no journal of its own for this GPU.
  virtual bool changes_through_agent() const { return false; }

  // Transient read errors so far (zero for devices that have none).
  virtual ReadHealth read_health() const { return {}; }
};

using GpuPtr = std::unique_ptr<Gpu>;

}  // namespace regime
