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
#include "session/settings.hpp"
#include "session/target.hpp"

namespace regime {
class RunStore;
}

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
  std::string after;                   // what was left set or restored; empty for replay
  std::optional<int64_t> stored_id;    // "sweep:ID" in the run database (not for replay)
  std::string db;                      // where it was kept
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

// The sweep's decision as every view prints it (plan/decision_view.hpp).
plan::DecisionView decision_view(const SweepReport& report);

// The sweep's table of measured caps and its decision, as `regime sweep` and `regime study` print
// them (plan/render.hpp).
std::string results_text(const SweepReport& report);
std::string decision_text(const SweepReport& report);

// A job's per-GPU figures, one line per cap: "  250 W: nvml:0 50.1 J 243 W, ... spread 2.1%".
std::string per_gpu_text(const SweepReport& report);

// The sweep's JSON (`regime sweep --json`, and what the run database keeps).
nlohmann::json to_json(const SweepReport& report);

// The measured caps as a sweep table (docs/contracts.md), highest cap first, with the intervals'
// exact ends and the default measured again at the end (window "again"): what the decision used,
// so that `regime recommend --sweep` decides it again the same way.
std::string sweep_table_csv(const SweepReport& report);

// Keeps a device sweep in the run database as a sweep table, so that it can be decided again
// (`regime recommend --run sweep:ID`). `kind` is "sweep" or "study"; returns the id.
// The decision goes in the decisions table beside it; `options` (settings_json) is kept with the
// GPU's driver and this Regime's version.
int64_t keep_sweep(SweepReport& report, const std::string& kind, const nlohmann::json& json,
                   const std::string& db, const nlohmann::json& options = nlohmann::json::object());
// The same in a store the command holds open.
int64_t keep_sweep(SweepReport& report, const std::string& kind, const nlohmann::json& json,
                   RunStore& store, const nlohmann::json& options);

// How a sweep was asked for, as kept in the run database; `caps` as given ("auto", a list, "plan").
nlohmann::json settings_json(const SweepSettings& s, const std::string& caps);

// The search options of a sweep over `caps` on a GPU described by `info` (one place for all).
plan::SearchOptions search_options(const GpuInfo& info, const SweepSettings& s,
                                   std::vector<double> caps, bool classify_default);

// Sweeps `caps` on opened targets: one GPU, or every GPU of one job with one cap for all (real
// GPUs of one model and range, live only: Error InvalidArgument otherwise), each set and restored
// through its PowerLimitGuard. The actuation policy is checked before any work starts. Throws
// WorkloadFailed (the limits already restored) when the workload ends first.
SweepReport sweep_targets(std::vector<Target>& targets, const WorkloadSpec& workload,
                          const std::vector<double>& caps, const SweepSettings& s,
                          const ActuationPolicy& policy);

// The steps of every device sweep, which a scheduler job's study (session/job_study.hpp) runs on
// its own loop and caps as well:
// A report on `devices` (one, or a job's: then `job_devices` is set) before any probe.
SweepReport new_sweep_report(const std::vector<std::string>& devices,
                             const std::vector<GpuInfo>& infos, const std::string& workload);
// The search options over `caps` for `gpus` GPUs of rep.info's model: the job's P_max, the prior,
// the default measured again at the end; records the strategy and objective in `rep`.
plan::SearchOptions sweep_search_options(SweepReport& rep, size_t gpus,
                                         const std::vector<double>& caps, const SweepSettings& s);
// The live search on a started loop sampling the GPUs of `infos`: one cap at a time on all of
// them through `set_all`, the default's regime the most constrained GPU's. Fills rep.outcome, the
// unit and, for a job, each GPU's figures per cap.
void search_live(SweepReport& rep, const std::vector<GpuInfo>& infos, plan::SearchOptions opt,
                 RunLoop& loop, Workload& work, std::function<void(double)> set_all,
                 const ProbeBudget& budget);

// `regime sweep`: opens the device (or the table) and sweeps; a device list sweeps one job.
SweepReport run_sweep(const SweepRequest& request);

}  // namespace regime::session
