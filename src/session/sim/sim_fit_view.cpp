#include "session/sim/sim_fit_view.hpp"

#include <fmt/format.h>

#include <set>

#include "twin/fit.hpp"

namespace regime::session {

namespace {

nlohmann::json or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string or_dash(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}", *v) : std::string("-");
}

std::string caps_list(const std::vector<double>& caps_W) {
  std::string out;
  for (double c : caps_W) out += (out.empty() ? "" : ",") + fmt::format("{:.0f}", c);
  return out;
}

}  // namespace

nlohmann::json to_json(const twin::SweepFitReport& report) {
  nlohmann::json ws = nlohmann::json::array();
  for (const auto& w : report.workloads)
    ws.push_back({{"workload", w.workload},
                  {"gpu", w.gpu},
                  {"fit_caps", w.fit_caps},
                  {"mape_energy_pct", or_null(w.mape_energy_pct)},
                  {"mape_time_pct", or_null(w.mape_time_pct)},
                  {"predicted_best_cap_W", w.predicted_best_cap_W},
                  {"measured_best_cap_W", w.measured_best_cap_W},
                  {"best_cap_regret_pct", w.best_cap_regret_pct},
                  {"spec_calibrated", w.spec_calibrated}});
  return {{"workloads", ws},
          {"median_mape_energy_pct", or_null(report.median_mape_energy_pct)},
          {"median_best_cap_regret_pct", or_null(report.median_best_cap_regret_pct)}};
}

std::string to_text(const twin::SweepFitReport& report) {
  std::string out =
      fmt::format("{:<42} {:>8} {:>16} {:>9} {:>9} {:>9} {:>9} {:>8}\n", "workload", "gpu",
                  "fit caps W", "E err %", "t err %", "best W", "meas. W", "regret%");
  for (const auto& w : report.workloads)
    out += fmt::format("{:<42} {:>8} {:>16} {:>9} {:>9} {:>9.0f} {:>9.0f} {:>8.2f}\n", w.workload,
                       w.gpu, caps_list(w.fit_caps), or_dash(w.mape_energy_pct),
                       or_dash(w.mape_time_pct), w.predicted_best_cap_W, w.measured_best_cap_W,
                       w.best_cap_regret_pct);
  if (report.median_mape_energy_pct)
    out += fmt::format(
        "median over {} workloads: energy error {:.2f} %, best-cap energy regret {:.2f} %\n",
        report.workloads.size(), *report.median_mape_energy_pct,
        report.median_best_cap_regret_pct.value_or(0));
  // Where the spec's constants are estimates the fit is less sure: say so once per card.
  std::set<std::string> uncalibrated;
  for (const auto& w : report.workloads)
    if (!w.spec_calibrated && uncalibrated.insert(w.gpu).second)
      out += fmt::format(
          "{}: the twin's constants are estimates, not calibrated across its limit range: its fits "
          "are less sure here (docs/twin.md, \"Where the twin is worse\") and their intervals "
          "{:.1f} points wider\n",
          w.gpu, 100 * twin::kUncalibratedFitExtraRel);
  return out;
}

}  // namespace regime::session
