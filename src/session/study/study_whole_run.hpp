#pragma once
// The study inside one run of the command (docs/study.md, "The job runs to its end"): the probe
// at the current limit, the sweep the regime warrants on the same run, then the rest of the
// command under the decision until it ends; the original limit restored afterwards (kept with
// --apply). The command is started once and never stopped by the study: a command that ends
// during the probe or the sweep is a finished job, and the report says how far the study got.
#include <functional>
#include <nlohmann/json.hpp>

#include "act/power_limit_guard.hpp"
#include "analysis/whole_run.hpp"
#include "plan/search.hpp"
#include "run/run_loop.hpp"
#include "session/site/site.hpp"
#include "session/study/study_types.hpp"
#include "session/sweep/sweep_types.hpp"

namespace regime::session {

// One in-job study, two ways of setting the job's limit: the guards of a command's study, or a
// scheduler job's JobCaps (session/scheduler/job_study.hpp). `set` puts every GPU of the job to a
// cap; `restore` puts them back to the limit the job started with (empty: left to whoever set the
// job up, as a scheduler's epilog does).
struct JobLimits {
  std::function<void(double cap_W)> set;
  std::function<void()> restore;
};

// The job's end besides its work ending of its own (a scheduler's epilog, SIGTERM): true stops the
// rest of the job's run.
using JobEnded = std::function<bool()>;

// The sweep on the running job through `limits`, then the decision's cap (or the starting limit,
// through `restore`) set for the rest. Throws WorkloadFailed, with the limits restored, when the
// job ended before a decision; the typed errors of the layers below otherwise.
void sweep_in_job(SweepReport& sweep, const std::vector<GpuInfo>& infos,
                  const plan::SearchOptions& options, RunLoop& loop, Workload& work,
                  const JobLimits& limits, const ProbeBudget& budget);

// The rest of the job, under whatever limit is set, until its work ends or `ended` says the job
// has; returns each GPU's trace of the whole run.
std::vector<Trace> run_job_to_end(RunLoop& loop, const JobEnded& ended);

// What the job's saving is reckoned from: the probe's window at the starting limit
// (`at_start`, the job's), the sweep's windows at the default limit and at the decision where a
// sweep decided.
SavingBasis job_saving_basis(const std::optional<Measurement>& at_start, const GpuInfo& info,
                             const SweepReport* sweep);

// True when the study runs the command to its end: the workload ends of its own (a command, or
// a built-in with steps=N), --stop-after-decision was not given, and the sweep is live (a restart
// sweep starts the command anew for each cap).
bool study_runs_whole(const StudyRequest& request);

// Fills the probe, plan, sweep (rep.sweep, its `after` saying what was left set), whole-run
// figures (rep.whole_run) and the command's exit status (rep.exit_status) of `rep`.
// `keep_decided` keeps rep.sweep as soon as it has decided, before the rest of the command runs:
// a study stopped later loses no measurement. Throws the typed errors of the layers below; not
// WorkloadFailed for a command that ends early.
void study_whole_run(const StudyRequest& request, RunSite& site, const ActuationPolicy& policy,
                     const nlohmann::json& plan_settings, StudyReport& rep,
                     const std::function<void()>& keep_decided);

}  // namespace regime::session
