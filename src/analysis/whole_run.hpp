#pragma once
// The figures of a whole run of a command that was studied while it ran (docs/study.md, "The job
// runs to its end"): every step it made, all its energy, the parts it ran in (the probe at the
// limit it started with, the caps tried, the rest under the decision), and the energy saved
// against running all of it at the GPU's default limit (or, where no window at the default was
// measured, at the limit it started with). Pure: a function of the run's traces, the times its
// parts began and the measured windows the saving is reckoned from.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/measurement.hpp"
#include "trace/trace.hpp"

namespace regime {

// One span of the run, summed over the run's GPUs. A step belongs to the span its end falls in,
// so the spans' steps add up to the run's.
struct RunPart {
  double from_s = 0;
  double to_s = 0;
  int steps = 0;
  double seconds = 0;
  double energy_J = 0;
  std::optional<double> energy_per_step_J;  // none without steps
};

// How far the study got before the command ended.
enum class StudyReach { Probe, Sweep, Decision };
std::string to_string(StudyReach r);  // "probe", "sweep", "decision"

struct WholeRunFigures {
  RunPart run;                       // the whole run, first sample to last
  RunPart probe;                     // at the limit the run started with
  std::optional<RunPart> profiling;  // the caps tried, when a sweep ran
  std::optional<RunPart> decided;    // the rest, under the decision, when one was reached
  std::optional<double> cap_W;       // the decision's cap; none: the starting limit kept
  StudyReach reached = StudyReach::Probe;
  // Against all of the run's steps at the reference's energy per step (a steady window at the
  // default limit, else at the starting limit): positive is energy saved. The caps tried are
  // counted in, as the user pays for them. The interval joins the reference window's and the
  // decision window's (in quadrature, each per-step interval times the steps it stands for). None
  // without steps or without a finite reference figure.
  // A part that ran at the reference's own limit costs what running at it costs: it counts as
  // run, so a run whose limit never moved from the reference's saves exactly 0 J (its start-up
  // steps are not a loss charged to anything).
  std::optional<double> saved_J;
  Interval saved_ci_J{0, 0};
  std::string saved_against;      // the reference: "default 700 W", "starting limit 500 W"
  bool ran_at_reference = false;  // every part ran at the reference's limit: nothing changed
  // What the caps tried cost beyond running those steps at the reference: positive is a cost.
  // None without a sweep or without a finite reference figure.
  std::optional<double> profiling_extra_J;
  std::optional<double> profiling_extra_s;
};

// The windows a saving is reckoned from.
struct SavingBasis {
  std::optional<Measurement> reference;  // the steady window at the reference limit (the job's)
  std::string against;                   // what that limit is, in words
  std::optional<Measurement> decision;   // the steady window at the decided limit, when measured
  std::optional<double> reference_W;     // the limit the reference window ran at
  // The probe's steady window at the starting limit, where that is not the reference's limit.
  std::optional<Measurement> start;
};

// The reference for a saving: the window at the default limit where one was measured (the probe
// when it ran at the default, else the sweep's window at the default), otherwise the probe's at
// the starting limit. `at_default` is the sweep's window at `default_W`, when a sweep ran.
SavingBasis saving_basis(const std::optional<Measurement>& at_start, double start_W,
                         const std::optional<Measurement>& at_default, double default_W);

// The times a study's parts began, on the run's clock.
struct StudyTimes {
  double probe_end_s = 0;             // the probe's last sample
  std::optional<double> sweep_end_s;  // the decision made: the rest begins (when reached)
  std::optional<double> cap_W;        // the decision's cap (none: the starting limit)
  bool sweep_ran = false;             // caps were tried
  std::optional<double> start_W;      // the limit the run started with (the probe's)
};

// `traces` is one per GPU of the run, all on one clock; `basis` the measured windows (the job's,
// energy summed over the GPUs).
WholeRunFigures whole_run_figures(const std::vector<Trace>& traces, const StudyTimes& times,
                                  const SavingBasis& basis);
// Against the probe's steady measurement at the starting limit alone.
WholeRunFigures whole_run_figures(const std::vector<Trace>& traces, const StudyTimes& times,
                                  const std::optional<Measurement>& at_start);

nlohmann::json to_json(const RunPart& p);
nlohmann::json to_json(const WholeRunFigures& f);

}  // namespace regime
