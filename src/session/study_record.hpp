#pragma once
// A study in the run database, beside its sweep and the sweep's decision.
#include "session/study.hpp"

namespace regime {
class RunStore;
}

namespace regime::session {

// The study in the run database, beside its sweep (if one ran) and the sweep's
// decision; sets rep.study_id.
void keep_study(const StudyRequest& request, RunStore& store, StudyReport& rep);

}  // namespace regime::session
