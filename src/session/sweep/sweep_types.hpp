#pragma once
// What `regime sweep` is asked and what it reports, filled by the sweep's steps and printed by its
// views (session/sweep/sweep.hpp runs it).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "common/gpu_info.hpp"
#include "plan/objective.hpp"
#include "plan/search.hpp"
#include "plan/twin_curve.hpp"
#include "present/decision_view.hpp"
#include "session/predict/predict.hpp"
#include "session/probe/probers.hpp"
#include "session/settings.hpp"
#include "session/site/site.hpp"
#include "session/site/target.hpp"
#include "session/sweep/results_keeper.hpp"

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
  std::string kept_in;               // where it was kept, as RunStore::location() shows it
  // The run database failed to keep the sweep: what failed, and where the results are kept.
  std::optional<StoreFailure> store_failure;
  std::string prior;  // the predictor of --prior, if any
  // The curve an adaptive search predicted unmeasured caps with (empty model: none used).
  plan::CurveNote curve;
  std::optional<double> prior_draw_W;  // what it predicted (nullopt: it had no answer)
  // A data-parallel job: every GPU's device, and each probe's per-GPU figures and spread
  // ({"cap_W", "gpus": [{device, energy_per_step_J, avg_power_W}], "energy_spread_pct", ...}).
  // `info` is then the first GPU's, and every figure of `outcome` is the job's.
  std::vector<std::string> job_devices;
  nlohmann::json per_gpu;
  // A job of phases: the cycle every cap's window covered whole (probers.hpp); nullopt for a
  // steady job, each window then one steady stretch.
  std::optional<double> cycle_s;
  // The table's gpu column: the model, prefixed "Nx " for a job of N GPUs.
  std::string gpu_label() const;
};

}  // namespace regime::session
