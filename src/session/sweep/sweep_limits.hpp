#pragma once
// The caps a sweep sets, and what it leaves set when it ends.
#include <string>

#include "act/guard_set.hpp"
#include "plan/decision.hpp"

namespace regime::session {

// One GPU's guard speaks for itself; a job's guards speak for the job
// (act/guard_set.hpp). Returns the enforced limit.
double set_every(PowerLimitGuardSet& guards, double cap_W);
void restore_every(PowerLimitGuardSet& guards);
// Leaves the chosen cap set (--apply) or restores the originals; says which.
std::string apply_or_restore(PowerLimitGuardSet& guards, const plan::Decision& d, bool apply,
                             const GpuInfo& info);

}  // namespace regime::session
