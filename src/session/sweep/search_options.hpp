#pragma once
// The options of a cap search, made in one place for every sweep: a device's, a replayed table's
// and a scheduler job's.
#include <optional>
#include <string>
#include <vector>

#include "plan/search.hpp"
#include "session/sweep/sweep_types.hpp"
#include "twin/spec.hpp"

namespace regime::session {

// The search options of a sweep over `caps` (highest first, the default limit among them, as
// caps_on and a study's plan give them) on a GPU described by `info` (one place for all). The
// curve is the caller's to set (configure_curve below): it knows the GPU's model. The regime at the
// default is named by the prober's caller (session/probe/default_regime.hpp), from the figures
// measured there.
plan::SearchOptions search_options(const GpuInfo& info, const SweepSettings& s,
                                   std::vector<double> caps);
// The search's curve from the GPU model's spec (plan::configure_curve), and for an adaptive
// search which curve that is and how far it is trusted, in `rep` for its report.
void configure_curve(SweepReport& rep, plan::SearchOptions& opt,
                     const std::optional<twin::GpuSpec>& spec);
// --prior: the predicted draw at the default limit places the second probe.
void apply_prior(SweepReport& rep, plan::SearchOptions& opt, const SweepSettings& s,
                 const std::string& gpu, const std::string& workload);
// The search options over `caps` for `gpus` GPUs of rep.info's model, whose spec (as
// twin::find_gpu_spec finds it) gives the curve: the job's P_max, the prior, the default measured
// again at the end; records the strategy and objective in `rep`.
plan::SearchOptions sweep_search_options(SweepReport& rep, size_t gpus,
                                         const std::optional<twin::GpuSpec>& spec,
                                         const std::vector<double>& caps, const SweepSettings& s);

}  // namespace regime::session
