#pragma once
// The study inside one run of the command (docs/study.md, "The job runs to its end"): the probe
// at the current limit, the sweep the regime warrants on the same run, then the rest of the
// command under the decision until it ends; the original limit restored afterwards (kept with
// --apply). The command is started once and never stopped by the study: a command that ends
// during the probe or the sweep is a finished job, and the report says how far the study got.
#include <functional>
#include <nlohmann/json.hpp>

#include "act/power_limit_guard.hpp"
#include "session/site/site.hpp"
#include "session/study/study_types.hpp"

namespace regime::session {

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
