#pragma once
// The regime of a sweep's default limit, named from its first probe (the highest cap).
#include <functional>
#include <optional>
#include <vector>

#include "analysis/measurement.hpp"
#include "common/gpu_info.hpp"
#include "session/probe/probers.hpp"

namespace regime::session {

// The default's regime for a search (plan::SearchOptions::classify): each GPU classified on its
// own figures there (with a live prober, its first probe, at the highest cap), the most
// constrained one the job's (analysis/data_parallel.hpp). Without a prober the one GPU's figures.
std::function<std::optional<Regime>(const Measurement&)> classify_at_default(
    const std::vector<GpuInfo>& infos, const LiveProber* prober);

}  // namespace regime::session
