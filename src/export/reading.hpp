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

// Reads info, the cheap fields, the energy counter, the reason counters and the power buffer,
// and the node state of node_state_dir().
// `health_before` is the device's read_health() after the previous round. Throws what the
// device throws (Error GpuLost for a GPU that stopped answering).
GpuReading read_gpu(Gpu& gpu, const ReadHealth& health_before);

}  // namespace regime::exporter
