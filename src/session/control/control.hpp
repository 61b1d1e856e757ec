#pragma once
// `regime control`: runs a workload while a controller moves the power limit (src/control/), and
// judges the run in energy and time per step. `thermal` controls from the start; `regime-gated`
// first probes the pair at the current limit on the same running workload, classifies it, and
// engages its inner thermal controller only for a thermal-bound pair; otherwise it says why once
// and leaves the limit alone. The original limit is restored at the end, on error and on signals
// (PowerLimitGuard).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "analysis/interleaved.hpp"
#include "analysis/segmented_measurement.hpp"
#include "control/controller.hpp"
#include "control/policies.hpp"
#include "session/control/control_types.hpp"
#include "session/site/target.hpp"

namespace regime::session {

// Error InvalidArgument for bad options or policy parameters, or a list of simulated devices
// (each is a machine of its own). A run that may not change the device runs dry. --evaluate must
// change the limit, so a dry one is refused (ReadOnly, ActuationRefused or InvalidArgument, by the
// reason) before any work for thermal and once the gate would engage for regime-gated.
// The GPUs are opened once: with `choose_seconds` (--evaluate without --seconds) the run length is
// chosen from them (EvaluationLength) before it is checked.
ControlReport run_control(const ControlRequest& request, const ChooseSeconds& choose_seconds = {});

}  // namespace regime::session
