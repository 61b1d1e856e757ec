#pragma once
// The options of `regime job begin` as a scheduler's prolog passes them, typed once here: the
// session takes a PowerPolicy and a list of GPU indices and parses nothing.
#include <optional>
#include <string>
#include <vector>

#include "session/scheduler/job_types.hpp"

namespace regime::cli {

// --gpu-power: default, auto, study, a cap in watts ("250", "250W") or a share of the default
// limit ("80%"). Error InvalidArgument saying what is accepted (the same rules as the Slurm
// plugin's check).
session::PowerPolicy parse_power_policy(const std::string& text);

// --gpu-power as written: the policy, or, for one that cannot be read, the default with why (a
// refused policy is not a failed prolog: that would drain the node).
struct PowerPolicyChoice {
  session::PowerPolicy policy;
  std::optional<session::PolicyRefusal> refused;
};
PowerPolicyChoice read_power_policy(const std::string& text);

// A scheduler's GPU list: "0,1", "0-3", "0,2-3" (Slurm's SLURM_JOB_GPUS), sorted and unique.
// Error InvalidArgument naming the bad item.
std::vector<int> parse_job_gpu_list(const std::string& text);

}  // namespace regime::cli
