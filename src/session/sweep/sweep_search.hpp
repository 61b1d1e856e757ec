#pragma once
// The live search of a device sweep: one run with the cap changed between windows. A scheduler
// job's study runs it on its own loop.
#include <functional>
#include <vector>

#include "plan/search.hpp"
#include "run/run_loop.hpp"
#include "session/probe/probers.hpp"
#include "session/site/site.hpp"
#include "session/sweep/sweep_types.hpp"

namespace regime::session {

// The live search on a started loop sampling the GPUs of `infos`: one cap at a
// time on all of them through `set_all`, the default's regime the most constrained GPU's. Fills
// rep.outcome, the unit and, for a job, each GPU's figures per cap.
void search_live(SweepReport& rep, const std::vector<GpuInfo>& infos, plan::SearchOptions opt,
                 RunLoop& loop, Workload& work, std::function<void(double)> set_all,
                 const ProbeBudget& budget);

}  // namespace regime::session
