#pragma once
// The presenters of `regime sim fit`: its table and its JSON, both built from the same fit report.
#include <nlohmann/json.hpp>
#include <string>

#include "twin/sweep.hpp"

namespace regime::session {

// {"workloads": [...], "median_mape_energy_pct", "median_best_cap_regret_pct"}: a figure with
// nothing held out to judge it by is null.
nlohmann::json to_json(const twin::SweepFitReport& report);

// One row per workload (the caps fitted from, the energy and time errors on the held-out caps, the
// predicted and the measured best cap, the regret), then the medians over the workloads.
std::string to_text(const twin::SweepFitReport& report);

}  // namespace regime::session
