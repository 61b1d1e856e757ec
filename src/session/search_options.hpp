#pragma once
// The options of a cap search, made in one place for every sweep: a device's, a replayed table's
// and a scheduler job's.
#include <string>
#include <vector>

#include "plan/search.hpp"
#include "session/sweep.hpp"

namespace regime::session {

// The search options of a sweep over `caps` on a GPU described by `info` (one
// place for all).
plan::SearchOptions search_options(const GpuInfo& info, const SweepSettings& s,
                                   std::vector<double> caps, bool classify_default);
// --prior: the predicted draw at the default limit places the second probe.
void apply_prior(SweepReport& rep, plan::SearchOptions& opt, const SweepSettings& s,
                 const std::string& gpu, const std::string& workload);
// The search options over `caps` for `gpus` GPUs of rep.info's model: the
// job's P_max, the prior, the default measured again at the end; records the strategy and
// objective in `rep`.
plan::SearchOptions sweep_search_options(SweepReport& rep, size_t gpus,
                                         const std::vector<double>& caps, const SweepSettings& s);

}  // namespace regime::session
