#pragma once
// A study in the run database, beside its sweep and the sweep's decision.
#include "session/study/study_types.hpp"

namespace regime {
class RunStore;
}

namespace regime::session {

// The study in the run database, beside its sweep (if one ran), its regime and the sweep's
// decision as rep.json gives them; `options` (settings_json of the plan) with the probe's settings
// and the --out folder (as "out_dir", absolute) is its provenance. Sets rep.study_id.
void keep_study(const StudyRequest& request, RunStore& store, const nlohmann::json& options,
                StudyReport& rep);

}  // namespace regime::session
