#pragma once
// The thermal policy: keeps the GPU under a target temperature by moving the power limit in
// steps. Above target_C it lowers the limit by step_W; below target_C - band_C it raises it by
// step_W; in between it holds. Never outside [min_W, max_W] (max_W is the default limit), and
// never two changes closer than dwell_s (the card's thermal time constant), so it cannot chase
// its own effect faster than the die can answer. It is incremental: the only state is the limit
// and the time of the last change, so a long stretch at a bound stores no error to unwind
// (anti-windup): the first reading past the other threshold moves the limit back at once.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "control/controller.hpp"
#include "control/policy_spec.hpp"

namespace regime::control {

struct ThermalParams {
  double target_C = 0;
  double band_C = 0;
  double step_W = 0;
  double period_s = 0;
  double dwell_s = 0;  // least time between two changes
  double min_W = 0;
  double max_W = 0;
};

// Defaults from the card: target 5 C under the software slowdown temperature (80 C when the card
// does not say), band 3 C, step 5% of the default limit (at least 5 W), period 5 s, dwell the
// card's thermal time constant (30 s when unknown), bounds [min, default].
ThermalParams thermal_defaults(const GpuInfo& info, std::optional<double> time_constant_s);
// The defaults overridden by the spec's target_C, band_C, step_W, period_s, dwell_s; Error
// InvalidArgument for an unknown key or a value out of range (named).
ThermalParams thermal_params(const PolicySpec& spec, const ThermalParams& defaults);

struct ThermalState {
  std::optional<double> last_change_s;
};

struct ThermalDecision {
  Action action;
  ThermalState state;
};

// The pure decision.
ThermalDecision decide_thermal(const ThermalParams& p, const ThermalState& s,
                               const ControlInput& in);

class ThermalController : public Controller {
 public:
  explicit ThermalController(ThermalParams p) : p_(p) {}
  std::string name() const override { return "thermal"; }
  double period_s() const override { return p_.period_s; }
  Action decide(const ControlInput& in) override;
  void resumed(double now_s) override { s_.last_change_s = now_s; }
  const ThermalParams& params() const { return p_; }

 private:
  ThermalParams p_;
  ThermalState s_;
};

}  // namespace regime::control
