#pragma once
// `regime control`: runs a workload while a controller moves the power limit (src/control/), and
// judges the run in energy and time per step. `thermal` controls from the start; `regime-gated`
// first probes the pair at the current limit on the same running workload, classifies it, and
// engages its inner thermal controller only for a thermal-bound pair; otherwise it says why once
// and leaves the limit alone. The original limit is restored at the end, on error and on signals
// (PowerLimitGuard).
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
#include "session/control_view.hpp"  // to_json and to_text of the report
#include "session/target.hpp"

namespace regime::session {

struct ControlRequest {
  std::string device;
  WorkloadSpec workload;
  std::string policy = "regime-gated";
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
  // The run database that keeps the run as a controller run (`regime runs`, control:ID); empty:
  // RunStore::default_path().
  std::string db;
};

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

// A long run measured as it goes (docs/control.md, "Long runs"): each segment of the run is
// measured on its own and folded in here, and its samples are then forgotten, so what a run keeps
// is flat in its length. The result is the run's Measurement: energy summed and divided by the
// steps summed; time per step, intervals, means and fractions weighted by steps (per-second
// figures: by seconds); maxima the largest; the 0.5 s power windows merged, kept as at most
// kMaxPowerWindows weighted points, and given back as as many evenly spaced quantiles. Segments
// without a complete step count for nothing when others have steps, as a whole-run measurement
// leaves out the time outside its steps.
class SegmentedMeasurement {
 public:
  static constexpr size_t kMaxPowerWindows = 1024;
  void add(const Measurement& segment);
  int segments() const { return steps_.count + seconds_.count; }
  // Error Internal before the first add().
  Measurement result() const;

 private:
  struct Weighted {
    double sum = 0, weight = 0;
    void add(const std::optional<double>& v, double w) {
      if (v) sum += *v * w, weight += w;
    }
    std::optional<double> mean() const {
      return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
    }
  };
  // The segments of one kind folded: with steps (weights: steps) or without (weights: seconds).
  struct Fold {
    Measurement first;
    int count = 0;
    double end_s = 0, energy_J = 0, seconds = 0, weight = 0;
    int steps = 0, samples = 0;
    EnergySource source = EnergySource::Counter;
    // Sums of weight * value and of (weight * interval half-width)^2.
    double time_sum = 0, time_lo2 = 0, time_hi2 = 0, energy_lo2 = 0, energy_hi2 = 0;
    Weighted p95_W, temp_C, sm_MHz, p05_sm_MHz, util_pct, limit_W, gap;
    std::optional<double> max_temp_C, max_sm_MHz;
    std::map<uint64_t, double> reason_seconds;
    bool reasons_known = false;
    std::vector<std::pair<double, double>> window_power_W;  // (W, windows it stands for), sorted
    void add(const Measurement& m, double weight);
    Measurement result() const;
  };
  Fold steps_, seconds_;
};

// Why the probe keeps the gated controller out, or empty when it should engage: a thermal-bound
// pair whose mean power is at or above the lowest limit (below it, no limit could bind).
std::string gate_reason(const RegimeReport& report, const GpuInfo& info);

// Why this run may not change the device, or empty when it may: --dry-run, REGIME_READ_ONLY, or a
// real GPU without --actuate.
std::string dry_run_reason(const ControlRequest& request, const ActuationPolicy& policy,
                           bool physical);

// The least run length an evaluation of `request` needs, as run_control demands it: regime-gated's
// probe, then a lead-in and every window, each long enough for the slowest GPU's die to settle at
// a new limit and be measured as long again. Opens the devices to read them; Error as
// run_control's for a device or policy it cannot use.
struct EvaluationLength {
  double min_s = 0;
  double settle_s = 0;  // of the slowest GPU
};
EvaluationLength evaluation_length(const ControlRequest& request);

// Error InvalidArgument for bad options or policy parameters, or a list of simulated devices
// (each is a machine of its own). A run that may not change the device runs dry. --evaluate must
// change the limit, so a dry one is refused (ReadOnly, ActuationRefused or InvalidArgument, by the
// reason) before any work for thermal and once the gate would engage for regime-gated.
ControlReport run_control(const ControlRequest& request);

}  // namespace regime::session
