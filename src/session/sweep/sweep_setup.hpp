#pragma once
// A sweep before its first probe: its report, and the checks that refuse it before any limit
// changes.
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "session/site/site.hpp"
#include "session/sweep/sweep_types.hpp"

namespace regime::session {

// A report on `devices` (one, or a job's: then `job_devices` is set) before any
// probe.
SweepReport new_sweep_report(const std::vector<std::string>& devices,
                             const std::vector<GpuInfo>& infos, const std::string& workload);
// Refused before any work starts, as a sweep changes the limits at its first
// probe. A job takes one cap for all its GPUs: real GPUs of one model and range, swept live
// (Error InvalidArgument); a real GPU needs --actuate, --apply one whose cap stays (Error
// ActuationRefused).
void check_can_sweep(const RunSite& site, const SweepSettings& s, const ActuationPolicy& policy);

}  // namespace regime::session
