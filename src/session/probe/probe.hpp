#pragma once
// `regime probe`: one short run of a GPU + workload pair at the current limit, measured and
// classified; the trace, the steps and a run record (SQLite) are saved. Never changes a limit.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "run/run_loop.hpp"
#include "session/probe/probe_types.hpp"
#include "session/site/target.hpp"
#include "store/run_store.hpp"

namespace regime::session {

// Error InvalidArgument for bad options; Error (the analysis's kind) when a run that regime cut
// short cannot be measured. A command that failed by itself gives a report with `failure` set.
ProbeReport run_probe(const ProbeRequest& request);

// Error InvalidArgument for bad options or simulated devices (each is a machine of its own).
JobProbeReport run_job_probe(const ProbeRequest& request);

}  // namespace regime::session
