#pragma once
// What `regime probe` is asked and what it reports (session/probe/probe.hpp runs it).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "run/run_loop.hpp"
#include "session/site/target.hpp"
#include "store/database_location.hpp"
#include "store/run_store.hpp"

namespace regime::session {

// Where a probe stands, handed to ProbeRequest::on_progress after every sample.
struct ProbeProgress {
  double elapsed_s = 0;  // run clock since the first sample
  double total_s = 0;    // the run length asked for
  int64_t steps = 0;     // step markers so far
  std::optional<double> power_W;
  std::optional<double> temp_C;
};

struct ProbeRequest {
  DeviceSet device;  // one GPU, or one job's GPUs (nvml:0,1, nvml:all, nvml:job)
  WorkloadSpec workload;
  double seconds = 60;
  // The cheap fields' period; empty: sample_ms_for's default for the device's clock.
  std::optional<double> sample_ms;
  // Seconds between reads of the energy counter; empty: energy_period_s_for's default.
  std::optional<double> energy_period_s;
  std::optional<double> warmup_s;  // drop this much instead of detecting the steady state
  bool no_steps = false;           // figures per second, no step markers expected
  std::string trace_out;           // default: STATE_DIR/runs/run-ID.trace.csv
  DatabaseLocation db;             // the run database that keeps the probe
  // Called after every sample: the caller limits how often it draws.
  std::function<void(const ProbeProgress&)> on_progress;
};

// A probe on the wall clock wakes once a second by default: power comes from the driver's buffer
// (20 ms points) drained every 2 s, energy from the counter, steps carry their own times, so
// the figures do not need 100 wakes a second, which cost about 0.9% of a core on an H200
// (docs/performance.md, "Waking once a second"). A simulated clock costs nothing to tick, and
// its models step at 10 ms.
inline constexpr double kWallClockSampleMs = 1000, kSimulatedSampleMs = 10;
double sample_ms_for(const ProbeRequest& r, bool simulated);
// A real GPU's energy counter is read at the start, at the end and every 30 s between: a read
// costs 4-17 ms of CPU on an H200, and the counter there moves in 100 ms steps, so a read carries
// up to 0.1 s of power in error however often it is taken. The analysis shapes the counter by the
// driver's power buffer between reads, so reads between the ends add cost and no accuracy to a
// probe's window (docs/probe.md, "The energy counter"). A simulated counter is free to read.
inline constexpr double kWallClockEnergyPeriod_s = 30, kSimulatedEnergyPeriod_s = 5;
double energy_period_s_for(const ProbeRequest& r, bool simulated);
// A real GPU's power buffer is drained every 2 s: it holds about 2.4 s of 20 ms points, so no
// point is lost, and each drain costs about 0.7 ms of CPU on an H200.
inline constexpr double kWallClockDrainPeriod_s = 2;

struct ProbeReport {
  RunRecord record;
  nlohmann::json run;                  // where things went and what the run cost
  std::optional<RegimeReport> report;  // empty when nothing could be measured
  std::string failure;                 // why nothing was measured (with no report)
  std::vector<std::string> warnings;   // how far to trust the figures
  bool simulated = false;
  bool is_command = false;
  int exit_status = 0;  // what regime exits with: the command's own status unless it was cut short
};

// One job on several GPUs (`--device nvml:0,1`, `nvml:all`): one process, one sampler per GPU,
// a trace and a run record per GPU, and the job's figures (analysis/data_parallel.hpp).
struct JobProbeReport {
  std::vector<ProbeReport> gpus;      // in the order of --device; each with its own record
  std::optional<Measurement> job;     // energy summed over GPUs, the shared step time
  std::optional<Regime> job_regime;   // the most constrained GPU's
  std::optional<GpuSpread> spread;    // how far the GPUs differ
  nlohmann::json usage;               // which GPUs the job uses, against --device (job_devices)
  std::vector<std::string> warnings;  // the run's, and any mismatch of --device with the job
  bool is_command = false;
  int exit_status = 0;
};

}  // namespace regime::session
