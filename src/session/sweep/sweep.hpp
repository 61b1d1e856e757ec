#pragma once
// A sweep: measure caps of one GPU + workload pair with a search strategy and decide. On a device
// (sim: or nvml:) the workload runs through the run loop and every cap goes through
// PowerLimitGuard; the original limit is restored at the end (or the chosen cap is left set with
// `apply`), on error and on signals. On replay:FILE the probes are rows of a sweep table.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "common/gpu_info.hpp"
#include "plan/objective.hpp"
#include "plan/search.hpp"
#include "present/decision_view.hpp"
#include "session/predict/predict.hpp"
#include "session/probe/probers.hpp"
#include "session/settings.hpp"
#include "session/site/site.hpp"
#include "session/site/target.hpp"
#include "session/sweep/results_keeper.hpp"
#include "session/sweep/sweep_types.hpp"

namespace regime::session {

// Sweeps `caps` on an opened site: one GPU, or every GPU of one job with one cap for all (real
// GPUs of one model and range, live only: Error InvalidArgument otherwise), each set and restored
// through its PowerLimitGuard. The actuation policy is checked before any work starts. Throws
// WorkloadFailed (the limits already restored) when the workload ends first.
SweepReport sweep_site(RunSite& site, const std::vector<double>& caps, const SweepSettings& s,
                       const ActuationPolicy& policy);
// `regime sweep`: opens the device (or the table) and sweeps; a device list sweeps one job. A run
// database that fails to keep the sweep does not fail it: `store_failure` says what failed and
// where the results are kept instead (results_keeper.hpp), for the command to print and then exit
// non-zero.
SweepReport run_sweep(const SweepRequest& request);

}  // namespace regime::session
