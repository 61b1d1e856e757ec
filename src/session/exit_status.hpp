#pragma once
// What `regime` exits with when the workload it ran stopped before the work asked of it.
#include "common/error.hpp"

namespace regime::session {

// 128 + the signal when the user interrupted regime (the signal was passed on to the workload),
// whatever status the workload chose on its way out; else the workload's own failing status, or
// 1 when it ended too early with status 0.
int stopped_workload_exit_status(const WorkloadFailed& e);

}  // namespace regime::session
