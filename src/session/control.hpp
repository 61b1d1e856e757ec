#pragma once
// `regime control`: runs a workload while a controller moves the power limit (src/control/), and
// judges the run in energy and time per step. `thermal` controls from the start; `regime-gated`
// first probes the pair at the current limit on the same running workload, classifies it, and
// engages its inner thermal controller only for a thermal-bound pair; otherwise it says why once
// and leaves the limit alone. The original limit is restored at the end, on error and on signals
// (PowerLimitGuard).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/classify.hpp"
#include "control/controller.hpp"
#include "control/thermal.hpp"
#include "session/target.hpp"

namespace regime::session {

struct ControlRequest {
  std::string device;
  WorkloadSpec workload;
  std::string policy = "regime-gated";
  double seconds = 300;
  double sample_ms = 100;          // the controller decides every few seconds
  std::optional<double> warmup_s;  // drop this much instead of detecting the steady state
  bool actuate = false;
};

struct ControlReport {
  std::string device, workload, policy;
  GpuInfo info;
  control::ThermalParams thermal;  // the inner controller's parameters, defaults filled in
  bool engaged = false;
  std::string reason;                 // why it engaged or stayed out, in words
  std::optional<RegimeReport> probe;  // regime-gated: the classification that decided
  double probe_s = 0;                 // regime-gated: how long it probed first
  std::vector<control::ControlAction> actions;
  Measurement measurement;  // the whole run, probe included
  double duration_s = 0;
  double limit_before_W = 0;
  double limit_after_W = 0;  // read back after the restore
  bool simulated = false;
};

// Why the probe keeps the gated controller out, or empty when it should engage: a thermal-bound
// pair whose mean power is at or above the lowest limit (below it, no limit could bind).
std::string gate_reason(const RegimeReport& report, const GpuInfo& info);

// Error InvalidArgument for bad options or policy parameters; ReadOnly or ActuationRefused before
// any work when the policy would change a GPU it may not (thermal: at once; regime-gated: when it
// engages).
ControlReport run_control(const ControlRequest& request);

nlohmann::json to_json(const ControlReport& report);

}  // namespace regime::session
