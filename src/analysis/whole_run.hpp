#pragma once
// The figures of a whole run of a command that was studied while it ran (docs/study.md, "The job
// runs to its end"): every step it made, all its energy, the parts it ran in (the probe at the
// limit it started with, the caps tried, the rest under the decision), and the energy saved
// against running all of it at the starting limit. Pure: a function of the run's traces and the
// times its parts began.
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
  // Against all of the run's steps at the starting limit's energy per step (the probe's steady
  // window, with its interval): positive is energy saved. The caps tried are counted in, as the
  // user pays for them. None without steps or without a finite starting figure.
  std::optional<double> saved_J;
  Interval saved_ci_J{0, 0};
};

// The times a study's parts began, on the run's clock.
struct StudyTimes {
  double probe_end_s = 0;             // the probe's last sample
  std::optional<double> sweep_end_s;  // the decision made: the rest begins (when reached)
  std::optional<double> cap_W;        // the decision's cap (none: the starting limit)
  bool sweep_ran = false;             // caps were tried
};

// `traces` is one per GPU of the run, all on one clock; `at_start` the probe's steady
// measurement at the starting limit (the job's, energy summed over the GPUs).
WholeRunFigures whole_run_figures(const std::vector<Trace>& traces, const StudyTimes& times,
                                  const std::optional<Measurement>& at_start);

nlohmann::json to_json(const RunPart& p);
nlohmann::json to_json(const WholeRunFigures& f);

}  // namespace regime
