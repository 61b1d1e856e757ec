#pragma once
// What `regime study` is asked and what it reports: the request, the dynamic-control finding and
// the report that the study's steps fill and its views print (session/study/study.hpp runs it).
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/whole_run.hpp"
#include "common/gpu_info.hpp"
#include "plan/study_plan.hpp"
#include "session/control/control_types.hpp"
#include "session/site/target.hpp"
#include "session/sweep/sweep_types.hpp"
#include "trace/trace.hpp"

namespace regime::session {

// A decision kept in the run store for this workload (its name) on this GPU model, as read back
// for a later run: a cap, or the default kept, from the kept sweep `sweep_id`; `why` says which.
struct KeptChoice {
  std::optional<double> cap_W;  // none: the limit the GPU has is kept
  std::optional<int64_t> sweep_id;
  std::string why;
};
// Looks the kept decision up for `workload` on a GPU of this model; none when nothing usable is
// kept (the study then probes and searches as usual).
using KeptLookup =
    std::function<std::optional<KeptChoice>(const GpuInfo& gpu, const std::string& workload)>;

struct StudyRequest {
  DeviceSet device;  // one GPU, one job's GPUs, or simulated GPUs studied in turn
  WorkloadSpec workload;
  double probe_seconds = 60;  // the probe at the current limit (simulated seconds on sim:)
  // A card still heating at the end of the probe is watched on, up to this long, until its
  // temperature is flat (the regime may change as it heats): the probe's last probe_seconds,
  // once settled, are the ones classified.
  double max_probe_seconds = 600;
  bool actuate = false;
  std::string out_dir;  // probe trace and study.json go here when set
  SweepSettings settings;
  // The gated controller's evaluation on a thermal-bound pair (`regime control --policy
  // regime-gated --evaluate`): its length, or 0 for enough windows for this card.
  double control_seconds = 0;
  bool control = true;  // false: --no-control
  // Stop the command once the study has decided (a characterization run), rather than run it to
  // its end under the decision.
  bool stop_after_decision = false;
  // --auto: the run trains at the decision kept for its workload name where `kept` finds one,
  // without probing or searching (session/study/study_kept.hpp).
  KeptLookup kept;
};

// What the study found for dynamic control.
struct StudyControl {
  bool engaged = false;
  std::string reason;                // why it engaged or stayed out
  std::string skipped;               // why the evaluation did not run, when it would have
  std::string command;               // the `regime control ... --evaluate` to run it by hand
  std::optional<ControlReport> run;  // the evaluation, when it ran
};

struct StudyReport {
  std::string device;
  std::string workload;
  double probe_seconds = 0;
  GpuInfo info;                      // as found before the probe
  RegimeReport regime;               // of the probe at the current limit
  plan::SweepPlan plan;              // what the regime warrants
  std::string sweep_command;         // the `regime sweep` a user runs to do it by hand
  std::optional<SweepReport> sweep;  // when one ran
  std::string skipped;               // why the planned sweep did not run
  std::vector<std::string> warnings;
  double probe_ran_s = 0;      // how long the probe ran, heating included
  bool still_heating = false;  // the temperature was not flat when the probe ended
  double end_temp_slope_C_per_min = 0;
  Trace probe_trace;  // of the probe at the current limit (for the report page)
  StudyControl control;
  std::optional<int64_t> study_id;  // "study:ID" in the run database
  // The command's one run, when the study ran it to its end (session/study/study_whole_run.hpp):
  // its figures, its exit status, and why the study stopped short of a decision ("" when it did
  // not).
  std::optional<WholeRunFigures> whole_run;
  std::optional<int> exit_status;
  std::string unfinished;
  // A study not run whole: the probe's run of the command ended on its own.
  bool probe_command_ended = false;
  bool stopped_command = false;    // --stop-after-decision stopped the command
  std::optional<KeptChoice> kept;  // --auto found a kept decision: the run trained at it
  std::string kept_after;          // what the kept run left set
  // The run database failed to keep the study: what failed, and where the results are kept.
  std::optional<StoreFailure> store_failure;
  std::string sim_model;  // the twin's model of a simulated GPU; empty for a real one
  nlohmann::json json;    // to_json of the finished study, made once by run_study

  // A job on several GPUs (nvml:0,1, nvml:all, nvml:job): one run of the command over all of
  // them, each GPU classified on its own figures (in the order of `job_devices`); `regime` is then
  // the most constrained GPU's, the job's, since the GPU a limit holds back sets the shared step.
  // The sweep sets one cap on every GPU (sweep_site). Empty for one GPU.
  std::vector<std::string> job_devices;
  std::vector<GpuInfo> job_infos;  // each GPU's, in the order of `job_devices`
  std::vector<RegimeReport> gpu_regimes;
  size_t regime_gpu = 0;                       // which GPU's regime is the job's
  std::vector<Trace> job_probe_traces;         // each GPU's probe trace (for the report page)
  std::optional<Measurement> job_measurement;  // energy summed over the GPUs, the shared steps
};

}  // namespace regime::session
