#pragma once
// The study's word on dynamic control: the regime gate's answer from the study's probe, and the
// gated controller's evaluation where it would engage.
#include "act/power_limit_guard.hpp"
#include "session/site/site.hpp"
#include "session/study/study_types.hpp"

namespace regime::session {

// The gated controller on a thermal-bound pair (`regime control --policy
// regime-gated --evaluate`), evaluated when it would engage and may run here; else why not. Its
// length, unless given, from the site's thermal time constant (spec).
void study_control(const StudyRequest& request, const RunSite& site, const ActuationPolicy& policy,
                   StudyReport& rep);

}  // namespace regime::session
