#include "control/policies.hpp"

#include <fmt/core.h>

#include "common/error.hpp"
#include "control/phase.hpp"
#include "control/thermal.hpp"

namespace regime::control {

namespace {

PolicySetup thermal_setup(const PolicySpec& spec, const GpuInfo& info,
                          std::optional<double> tau_s) {
  const ThermalParams p = thermal_params(spec, thermal_defaults(info, tau_s));
  PolicySetup s;
  s.controller = std::make_unique<ThermalController>(p);
  s.bounds = {p.min_W, p.max_W, p.step_W, p.period_s};
  s.dwell_s = p.dwell_s;
  s.params = {{"target_C", p.target_C}, {"band_C", p.band_C},   {"step_W", p.step_W},
              {"period_s", p.period_s}, {"dwell_s", p.dwell_s}, {"min_W", p.min_W},
              {"max_W", p.max_W}};
  s.params_text = fmt::format(
      "target {:.1f} C, band {:.1f} C, step {:.0f} W, period {:.0f} s, dwell {:.0f} s, limits "
      "[{:.0f}, {:.0f}] W",
      p.target_C, p.band_C, p.step_W, p.period_s, p.dwell_s, p.min_W, p.max_W);
  return s;
}

// The phase policy learns each phase's cap on the running workload, then sets it at each
// change of phase: no step limit, and a change allowed every period.
PolicySetup phase_setup(const PolicySpec& spec, const GpuInfo& info, std::optional<double>) {
  const PhaseParams p = phase_params(spec, info);
  PolicySetup s;
  s.controller = std::make_unique<PhaseController>(p);
  s.bounds = {p.min_W, p.max_W, 0, 0};
  s.dwell_s = p.settle_s;
  s.params = {{"observe_s", p.observe_s},
              {"learn_s", p.learn_s},
              {"caps", p.caps},
              {"slowdown_pct", p.slowdown_pct},
              {"min_gain_pct", p.min_gain_pct},
              {"period_s", p.period_s},
              {"min_W", p.min_W},
              {"max_W", p.max_W}};
  s.params_text = fmt::format(
      "observe {:.0f} s, learn {:.0f} s, {} caps in [{:.0f}, {:.0f}] W, each phase's cap within "
      "+{:.0f}% time, engaged when it saves {:g}% over one cap, period {:g} s",
      p.observe_s, p.learn_s, p.caps, p.min_W, p.max_W, p.slowdown_pct, p.min_gain_pct, p.period_s);
  return s;
}

}  // namespace

const std::vector<PolicyEntry>& controller_policies() {
  static const std::vector<PolicyEntry> kPolicies = {
      {"thermal", thermal_setup},
      {"phase", phase_setup},
  };
  return kPolicies;
}

std::string policy_names(const std::string& separator) {
  std::string out;
  for (const PolicyEntry& p : controller_policies()) out += (out.empty() ? "" : separator) + p.name;
  return out;
}

const PolicyEntry* find_policy(const std::string& name) {
  for (const PolicyEntry& p : controller_policies())
    if (p.name == name) return &p;
  return nullptr;
}

PolicySetup make_policy(const PolicySpec& spec, const GpuInfo& info,
                        std::optional<double> time_constant_s) {
  const PolicyEntry* entry = find_policy(spec.name);
  if (!entry)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy '{}': unknown policy (expected one of: {})", spec.name,
                            policy_names(", ")));
  return entry->make(spec, info, time_constant_s);
}

}  // namespace regime::control
