#pragma once
// The restart search of a device sweep: one run per cap, each started afresh.
#include "act/power_limit_guard.hpp"
#include "plan/search.hpp"
#include "session/probe/probers.hpp"
#include "session/site/site.hpp"
#include "session/sweep/sweep_types.hpp"

namespace regime::session {

// One run per cap on the site's one GPU, each started afresh under `guard`.
void search_restart(SweepReport& rep, const RunSite& site, plan::SearchOptions opt,
                    PowerLimitGuard& guard, const ProbeBudget& budget);

}  // namespace regime::session
