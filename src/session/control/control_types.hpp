#pragma once
// What `regime control` is asked and what it reports: the evaluation's windows and arms, each
// GPU's run (session/control/control.hpp runs it).
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "analysis/interleaved.hpp"
#include "control/controller.hpp"
#include "control/policies.hpp"
#include "control/policy_spec.hpp"
#include "session/site/target.hpp"
#include "store/database_location.hpp"

namespace regime::session {

struct ControlRequest {
  DeviceSet device;  // one GPU, or one job's GPUs, each with its own controller
  WorkloadSpec workload;
  control::PolicySpec policy{"regime-gated", {}, "regime-gated"};
  double seconds = 300;
  double sample_ms = 100;          // the controller decides every few seconds
  std::optional<double> warmup_s;  // drop this much instead of detecting the steady state
  bool actuate = false;
  // Compute and log what the controller would set, and set nothing. Also the default where the
  // device may not be changed: REGIME_READ_ONLY, or a real GPU without --actuate.
  bool dry_run = false;
  // The workload with and without the controller in interleaved windows A B A B ... A.
  bool evaluate = false;
  int windows = 7;  // odd, >= 5: A first and last, so a linear drift cancels
  // The run database that keeps the run as a controller run (`regime runs`, control:ID).
  DatabaseLocation db;
};

// The least run length an evaluation needs on the GPUs it opened: regime-gated's probe, then a
// lead-in and every window, each long enough for the slowest GPU's die to settle at a new limit
// and be measured as long again.
struct EvaluationLength {
  double min_s = 0;
  double settle_s = 0;  // of the slowest GPU
};
// --evaluate without --seconds: the run length chosen from the opened GPUs' evaluation length,
// before the length is checked and any work runs.
using ChooseSeconds = std::function<double(const EvaluationLength&)>;

// The verdict's margins (analysis/interleaved.hpp): chosen on simulated pairs and checked on
// others (docs/control.md, "How the verdict is decided").
inline constexpr VerdictRule kControlVerdictRule{3.0, 3.0};

// Per arm of an evaluation: the levels fitted over its windows, 95% intervals.
struct ArmFigures {
  double energy_per_step_J = 0;
  Interval energy_per_step_ci_J{0, 0};
  double time_per_step_s = 0;
  Interval time_per_step_ci_s{0, 0};
  int windows = 0;
  int steps = 0;
};

// One window of an evaluation, over its measured part (the settling time after the switch is
// dropped). Times on the run clock, from the start of the run.
struct EvaluationWindow {
  bool controlled = false;
  double t0_s = 0, t1_s = 0;
  Measurement measurement;
};

struct Evaluation {
  double lead_in_s = 0;  // control before the first window, not measured: it finds its limit
  double window_s = 0;   // each window, settling included
  double settle_s = 0;   // dropped at the start of each window: the die settles at the new limit
  std::vector<EvaluationWindow> windows;
  ArmFigures baseline, controlled;
  double energy_change_pct = 0;
  Interval energy_change_ci_pct{0, 0};
  double time_change_pct = 0;
  Interval time_change_ci_pct{0, 0};
  Verdict verdict = Verdict::NoSignificantEffect;
  VerdictRule rule = kControlVerdictRule;
  int dof = 0;
};

struct ControlReport {
  std::string device, workload, policy;
  GpuInfo info;
  // The (inner) controller: its policy name, its parameters in force with the defaults filled
  // in, and the same in words.
  std::string controller;
  nlohmann::json controller_params = nlohmann::json::object();
  std::string controller_text;
  bool engaged = false;
  std::string reason;                 // why it engaged or stayed out, in words
  std::optional<RegimeReport> probe;  // regime-gated: the classification that decided
  double probe_s = 0;                 // regime-gated: how long it probed first
  std::vector<control::ControlAction> actions;
  std::vector<control::ControlAction> decisions;  // dry runs: every decision, holds included
  Measurement measurement;                        // the whole run, probe included
  double duration_s = 0;
  double origin_s = 0;  // the run clock at the first sample: Unix time on a real GPU, 0 simulated
  double limit_before_W = 0;
  double limit_after_W = 0;  // read back after the restore
  bool simulated = false;
  bool dry_run = false;
  std::string dry_run_why;  // what made it a dry run, and how to let it act
  bool evaluate = false;
  // --evaluate with the controller engaged; without it (stayed out) the run is all baseline.
  std::optional<Evaluation> evaluation;

  // A job on several GPUs (--device nvml:0,1, nvml:all, nvml:job): each GPU's own run (its probe,
  // gate, controller, actions, measurement, limits, and with --evaluate its own windows), in the
  // order of --device. The fields above are then the job's: `device` the list, `info` the first
  // GPU's, `engaged` when any GPU's controller engaged, `reason` each GPU's, `measurement` and
  // `evaluation` over the GPUs together (energy summed, the shared steps:
  // analysis/data_parallel.hpp). Empty for one GPU.
  std::vector<ControlReport> gpus;
  std::optional<Regime> job_regime;  // the most constrained GPU's (regime-gated)
  std::optional<GpuSpread> spread;   // how far the GPUs differ over the run
  nlohmann::json usage;              // which GPUs the job uses, against --device (job_devices)
  std::vector<std::string> warnings;
  std::optional<int64_t> stored_id;  // control:ID in the run database
  // The trace files written as the run went, one per GPU in the order of --device, and how they
  // are thinned (docs/control.md, "The trace on disk"); null before the run.
  nlohmann::json trace;
};

}  // namespace regime::session
