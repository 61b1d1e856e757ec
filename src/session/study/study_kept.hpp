#pragma once
// A later run of a workload already studied (`regime study --auto --workload-name NAME`): the
// decision kept in the run store for that name on this GPU model is set on the run's GPUs before
// the workload starts, the workload runs to its end under it with nothing probed or searched, and
// the original limit comes back afterwards (kept with --apply). Where nothing usable is kept, the
// study runs as usual and keeps its decision under the name for the next run.
#include <nlohmann/json.hpp>
#include <string>

#include "act/power_limit_guard.hpp"
#include "session/site/site.hpp"
#include "session/study/study_types.hpp"

namespace regime::session {

// Runs the workload under the kept decision when `request.kept` finds one for the site's GPU model
// and workload name: fills rep.kept, rep.whole_run (every part at the kept decision),
// rep.exit_status and rep.json, and returns true. Returns false, having changed nothing, when none
// is kept.
bool study_at_kept_decision(const StudyRequest& request, RunSite& site,
                            const ActuationPolicy& policy, StudyReport& rep);

// The kept run as JSON: {"device", "workload", "gpu", "kept": {"sweep_id", "cap_W", "why"},
// "job": whole-run figures with "exit_status", "after"}, and as text.
nlohmann::json kept_json(const StudyReport& rep);
std::string kept_text(const StudyReport& rep);

}  // namespace regime::session
