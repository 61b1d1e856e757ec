#pragma once
// A sweep: measure caps of one GPU + workload pair with a search strategy and decide. On a device
// (sim: or nvml:) the workload runs through the run loop and every cap goes through
// PowerLimitGuard; the original limit is restored at the end (or the chosen cap is left set with
// `apply`), on error and on signals. On replay:FILE the probes are rows of a sweep table.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "common/gpu_info.hpp"
#include "plan/decision_view.hpp"
#include "plan/objective.hpp"
#include "plan/search.hpp"
#include "session/predict.hpp"
#include "session/probers.hpp"
#include "session/results_keeper.hpp"
#include "session/settings.hpp"
#include "session/site.hpp"
#include "session/target.hpp"

namespace regime::session {

struct SweepRequest {
  DeviceSet device;       // nvml:N, sim:MODEL, replay:FILE, or one job's GPUs
  WorkloadSpec workload;  // for replay: only `builtin`, the table's workload name
  CapsSpec caps;
  bool actuate = false;
  SweepSettings settings;
  std::string table_out;  // also write the measured sweep table here (`recommend --sweep` reads it)
};

struct SweepReport {
  std::string device;
  std::string workload;
  std::string unit = "step";  // what one unit of work is ("epoch" in some sweep tables)
  GpuInfo info;
  plan::Strategy strategy = plan::Strategy::Adaptive;
  plan::Objective objective;
  plan::SearchOutcome outcome;
  std::string after;                 // what was left set or restored; empty for replay
  std::optional<int64_t> stored_id;  // "sweep:ID" in the run database (not for replay)
  std::string db;                    // where it was kept
  // The run database failed to keep the sweep: what failed, and where the results are kept.
  std::optional<StoreFailure> store_failure;
  std::string prior;                   // the predictor of --prior, if any
  std::optional<double> prior_draw_W;  // what it predicted (nullopt: it had no answer)
  // A data-parallel job: every GPU's device, and each probe's per-GPU figures and spread
  // ({"cap_W", "gpus": [{device, energy_per_step_J, avg_power_W}], "energy_spread_pct", ...}).
  // `info` is then the first GPU's, and every figure of `outcome` is the job's.
  std::vector<std::string> job_devices;
  nlohmann::json per_gpu;
  // The table's gpu column: the model, prefixed "Nx " for a job of N GPUs.
  std::string gpu_label() const;
};

// Sweeps `caps` on an opened site: one GPU, or every GPU of one job with one cap for all (real
// GPUs of one model and range, live only: Error InvalidArgument otherwise), each set and restored
// through its PowerLimitGuard. The actuation policy is checked before any work starts. Throws
// WorkloadFailed (the limits already restored) when the workload ends first.
SweepReport sweep_site(RunSite& site, const std::vector<double>& caps, const SweepSettings& s,
                       const ActuationPolicy& policy);
// `regime sweep`: opens the device (or the table) and sweeps; a device list sweeps one job. A run
// database that fails to keep the sweep does not fail it: `store_failure` says what failed and
// where the results are kept instead (results_keeper.hpp), for the command to print and then exit
// non-zero.
SweepReport run_sweep(const SweepRequest& request);

}  // namespace regime::session
