#pragma once
// A control policy as the user names it (`--policy NAME[:key=value,...]`), read once at the
// command line; each policy (control/policies.hpp) reads its own parameters from it and refuses
// the ones it does not know.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace regime::control {

// A policy as the user wrote it: "thermal:target_C=80,step_W=10" -> {"thermal", {...}}.
struct PolicySpec {
  std::string name;
  std::map<std::string, std::string> params;
  std::string text;  // as written, for reports
};
// Error InvalidArgument for an empty name, a parameter without '=' or a repeated key.
PolicySpec parse_policy(const std::string& text);
// The parameter as a finite number; Error InvalidArgument naming the policy and the key.
std::optional<double> number_param(const PolicySpec& spec, const std::string& key);
// Error InvalidArgument naming the first parameter of `spec` not in `known` (listed in the
// message in the order given).
void require_known_params(const PolicySpec& spec, const std::vector<std::string>& known);

}  // namespace regime::control
