#pragma once
// Controller policies by name, as `regime control --policy NAME[:key=value,...]` names them:
// adding a policy is its Controller in a file of its own and one row in the table of
// policies.cpp. The session's gate (`regime-gated`) wraps any of them.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "control/controller.hpp"
#include "control/policy_spec.hpp"

namespace regime::control {

// One policy set up for one GPU, before it runs.
struct PolicySetup {
  ControllerPtr controller;
  LimitBounds bounds;       // what none of its actions may cross
  double dwell_s = 0;       // least time between two changes: how long the die is left to answer
  nlohmann::json params;    // its parameters in force, defaults filled in
  std::string params_text;  // the same in words
};

struct PolicyEntry {
  std::string name;
  // Its parameters for the GPU (the card's defaults, its thermal time constant where known,
  // overridden by the spec's keys); Error InvalidArgument for a bad key or value.
  std::function<PolicySetup(const PolicySpec&, const GpuInfo&, std::optional<double> tau_s)> make;
};

// Every policy, in the order the help names them.
const std::vector<PolicyEntry>& controller_policies();
// The names joined with `separator`: "thermal".
std::string policy_names(const std::string& separator);
// The entry of `name`, or nullptr.
const PolicyEntry* find_policy(const std::string& name);
// The policy the spec names, set up for the GPU; Error InvalidArgument for an unknown name
// (naming the policies) or a bad parameter.
PolicySetup make_policy(const PolicySpec& spec, const GpuInfo& info,
                        std::optional<double> time_constant_s);

}  // namespace regime::control
