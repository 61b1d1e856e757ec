#pragma once
// One round of reads of a GPU for the exporter: only the read methods of the Gpu interface, so the
// exporter can never change a limit; and what Regime's state on the node says of the GPU (the
// job the node agent serves on it, a cap Regime holds on it), read from files, never changed.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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
  // The job the node agent (regimed) serves on this GPU: Slurm's job id, as the prolog gave it.
  std::optional<std::string> job;
  // Regime holds the limit: the power-limit journal has the GPU's original, to be restored.
  // `kept`: the cap was left on purpose (a decision applied, `limit set`), not a run's.
  bool capped = false;
  bool cap_kept = false;
};

// The job id of each GPU (by UUID) in the node agent's agent-jobs.json; entries without a job id
// or a GPU UUID are skipped.
std::map<std::string, std::string> jobs_by_uuid(const nlohmann::json& agent_jobs);

// Where Regime's node state is: the folder of power-limits/ and agent-jobs.json
// ($REGIME_SYSTEM_STATE_DIR in tests, else /var/lib/regime), whoever the exporter runs as.
std::filesystem::path node_state_dir();

// Fills `job`, `capped` and `cap_kept` of `r` from `state_dir` (files that are missing or cannot
// be read or parsed say nothing: no job, no cap).
void read_node_state(GpuReading& r, const std::filesystem::path& state_dir);

// The power buffer, the cheap fields and the clock-event reason counters are read every round:
// the driver's buffer holds about 2.4 s (docs/contracts.md), and a counter served stale makes
// Prometheus' rate() wrong over short windows. The energy counter is read on slow rounds only (a
// read costs milliseconds of CPU on an H200) and advanced between them by the power buffer
// (served_energy.hpp). The limits and the node's state files change rarely, and the rolling
// regime moves with a window of a minute, so they are read (and it is classified) on "slow"
// rounds only, one every this many seconds; classifying every round was a third of the
// exporter's cost on 8 fake GPUs (docs/performance.md).
inline constexpr double kSlowRoundPeriodS = 10;

// Whether round `round` (0, 1, ...) of a loop with period `period_s` is a slow one: the first
// round, then one every `slow_period_s` (every round when the period is that long or longer).
bool slow_round(long round, double period_s, double slow_period_s = kSlowRoundPeriodS);

// Reads the cheap fields, the reason counters, the power buffer and, with `read_energy`, the energy
// counter; with `last_slow` (the GPU's reading of the last slow round) nothing else: its info
// (identity and limits) and node state are carried.
// Without it, reads info and the node state of node_state_dir() too. `health_before` is the
// device's read_health() after the previous round. Throws what the device throws (Error GpuLost
// for a GPU that stopped answering).
GpuReading read_gpu(Gpu& gpu, const ReadHealth& health_before,
                    const GpuReading* last_slow = nullptr, bool read_energy = true);

}  // namespace regime::exporter
