#pragma once
// The steps of `regime control` (run_control, session/control/control.hpp), each with its input and
// its output: the request checked, the GPUs opened with a lane each (its report, its die's settling
// time, its controller), the run length an evaluation needs, the refusals due before any work,
// the gate's probe, the controlled run (plain or the interleaved windows of --evaluate), each
// GPU's figures, and the report of one GPU or of the job gathered from its lanes.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "act/guard_set.hpp"
#include "act/power_limit_guard.hpp"
#include "analysis/measure.hpp"
#include "analysis/segmented_measurement.hpp"
#include "control/controller.hpp"
#include "control/policies.hpp"
#include "run/run_loop.hpp"
#include "session/control/control_types.hpp"
#include "session/site/command_gpus.hpp"
#include "session/site/site.hpp"
#include "session/site/target.hpp"
#include "trace/chunked_trace.hpp"

namespace regime::session {

// How a command of `regime control` looks, for errors about the workload.
inline constexpr const char* kControlExample =
    "regime control --device nvml:0 --actuate --policy regime-gated -- python3 train.py";

// One GPU of the run: its report (filled as the run goes), its card's thermal time constant where
// Regime knows the model, and its controller (the inner one for regime-gated).
struct ControlGpu {
  ControlReport rep;
  std::optional<double> tau_s;
  control::PolicySetup controller;
};

// What run_control has opened and checked before any work runs.
struct ControlSetup {
  bool gated = false;  // regime-gated: probe first, control only a thermal-bound GPU
  std::vector<Target> targets;
  std::vector<Gpu*> gpus;  // in the order of --device
  ActuationPolicy policy;
  std::vector<ControlGpu> lanes;  // one per GPU, in the order of `gpus`
  double settle_s = 0;            // the slowest die's settling time at a new limit
  bool job() const { return gpus.size() > 1; }
};

// A long run without --evaluate is measured in segments as it goes (SegmentedMeasurement).
struct SegmentPlan {
  bool on = false;
  double from_s = 0;  // start of the segment being recorded, run clock
  double first_s = 0;
  double end_s = 0;  // the run's planned end
  MeasureOptions first, later;
};

// What the run recorded: each GPU's trace (from the last segment's start when measured in
// segments), the run's times, the evaluation's window spans ([start, end], run clock) and the
// segments measured as the run went; and each GPU's trace on disk, written in chunks as the run
// went (trace/chunked_trace.hpp), its writer open until the figures are in.
struct RecordedControlRun {
  std::vector<Trace> traces;
  RunStats stats;
  std::vector<std::pair<double, double>> windows;
  SegmentPlan plan;
  std::vector<SegmentedMeasurement> segments;
  std::vector<std::filesystem::path> trace_files;  // X.trace.csv per GPU, in the order of --device
  std::vector<std::unique_ptr<ChunkedTraceWriter>> writers;
};

// How a control run's trace on disk is thinned (docs/control.md, "The trace on disk").
inline constexpr ChunkRule kControlTraceRule{300, 10};

// Where each GPU's trace of a control run goes: STATE_DIR/runs/control-UTC-PID-N-gpuI.trace.csv
// (N counts the runs of this process), the folder made. Error Io when it cannot be.
std::vector<std::filesystem::path> control_trace_files(size_t gpus);

// Trace files as a control run's record names them: {"files": [X.trace.csv per GPU, in the order
// of --device], "whole_s", "bucket_s"}.
nlohmann::json control_trace_json(const std::vector<std::filesystem::path>& files);

// A measured stretch as written beside the trace: its span, figures and 95% intervals.
WindowFigures window_figures(const std::string& kind, const Measurement& m);

// Each GPU's figures after the run: its measurement and, with an evaluation, its windows.
struct LaneFigures {
  std::vector<Measurement> per_gpu;
  std::vector<std::vector<EvaluationWindow>> windows;  // empty without an evaluation
};

// The request checked (workload, run length, --windows) and its policy parsed; Error
// InvalidArgument for bad options or a policy neither regime-gated nor in the controller table.
// With `check_length` false the run length is left to be checked once it is chosen.
control::PolicySpec checked_control_policy(const ControlRequest& request, bool check_length = true);

// The GPUs --device names: one (any device, its own clock) or a job's (real GPUs, one clock).
std::vector<Gpu*> control_gpus(std::vector<Target>& targets);

// Each GPU's lane as the run starts: its report (device, limits, controller and its parameters,
// regime-gated's probe_s, whether it runs dry and why) and its controller. Error InvalidArgument
// for bad policy parameters.
std::vector<ControlGpu> control_lanes(const ControlRequest& request,
                                      const control::PolicySpec& spec,
                                      const std::vector<Target>& targets,
                                      const std::vector<Gpu*>& gpus, const ActuationPolicy& policy);

// How long the slowest GPU's die takes to settle at a new limit: 3 thermal time constants, the
// controller's dwell where the card's constant is unknown.
double slowest_settle_s(const std::vector<ControlGpu>& lanes);

// An evaluation's length: the probe, then a lead-in and `windows` windows, each settling and then
// measured as long again.
double evaluation_seconds(double probe_s, int windows, double settle_s);
// The same for the opened GPUs: the first lane's probe and the slowest die's settling time.
EvaluationLength evaluation_length(const ControlSetup& setup, int windows);

// Error InvalidArgument when regime-gated's probe_s is outside [10, --seconds), or when --evaluate
// gives too few seconds for its windows to settle and be measured (saying how many it needs).
// A controller that learns first (learn_s > 0) needs that long before an evaluation's windows.
void check_control_length(const ControlRequest& request, bool gated, double probe_s,
                          double settle_s, double learn_s = 0);

// The longest a lane's controller learns before it controls (Controller::learn_s).
double slowest_learn_s(const std::vector<ControlGpu>& lanes);

// Steps 1 to 5: the request checked, the GPUs opened, their lanes made, the run length checked,
// and for thermal (it acts from the start) what it may not do refused before any work runs.
// The GPUs are opened once, through the site. With `choose_seconds` (--evaluate without
// --seconds) the run length is chosen from the opened GPUs and set in `request` before it is
// checked.
ControlSetup open_control(ControlRequest& request, const ChooseSeconds& choose_seconds);
ControlSetup open_control(const ControlRequest& request);  // the run length as given

// regime-gated's decision for one GPU on its probe: engaged, with the regime's confidence, or
// left out with the gate's reason.
void gate_lane(ControlReport& lane, const RegimeReport& probe);

// The segments of a long run without --evaluate: the first long enough for the warm-up to be
// found in it, the rest shorter; off for a run too short for two.
SegmentPlan segment_plan(const ControlRequest& request, double t0_s);

// Runs the workload under control and records it; a workload that ends early or fails throws
// WorkloadFailed. Fills the lanes' gate decisions, actions and decisions, and `rep.evaluation`'s
// window lengths under --evaluate.
RecordedControlRun record_control_run(const ControlRequest& request, ControlSetup& setup,
                                      Workload& work, ControlReport& rep,
                                      PowerLimitGuardSet& guards, JobProcessWatch& watch);

// Each window's figures over its measured part (after settle_s), times from the trace's start.
// WorkloadFailed for a window without a whole step.
std::vector<EvaluationWindow> measure_windows(const Trace& trace,
                                              const std::vector<std::pair<double, double>>& spans,
                                              double settle_s);

// The level of each arm, and the changes, fitted over the evaluation's windows
// (analysis/interleaved.hpp), and the verdict.
void judge_windows(Evaluation& evaluation);

// After the run: each lane's limit read back, times, measurement and trace files, and under an
// evaluation its windows, judged where it engaged (and written beside each GPU's trace, whose files
// are then closed).
LaneFigures measure_lanes(const ControlRequest& request, ControlSetup& setup,
                          const RecordedControlRun& run, bool evaluated);

// The job's windows: each GPU's over the same stretch, energy summed.
std::vector<EvaluationWindow> job_windows(
    const std::vector<std::vector<EvaluationWindow>>& per_gpu_windows);

// One GPU: its own report is the run's, with what the command was seen to use.
ControlReport one_gpu_report(const ControlReport& lane, const ControlReport& run);

// A job: every GPU's report, and the job's figures over them (regime, reason, measurement,
// spread, every GPU's trace file, and its evaluation judged on the job's windows).
void gather_job_report(ControlReport& rep, const std::vector<ControlGpu>& lanes,
                       const LaneFigures& figures, const RunStats& stats);

// Why the probe keeps the gated controller out, or empty when it should engage: a thermal-bound
// pair whose mean power is at or above the lowest limit (below it, no limit could bind).
std::string gate_reason(const RegimeReport& report, const GpuInfo& info);

// Why this run may not change the device, or empty when it may: --dry-run, REGIME_READ_ONLY, or a
// real GPU without --actuate.
std::string dry_run_reason(const ControlRequest& request, const ActuationPolicy& policy,
                           bool physical);

}  // namespace regime::session
