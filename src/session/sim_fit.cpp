#include "session/sim_fit.hpp"

#include "common/error.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

namespace {

nlohmann::json or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

twin::CurveModel parse_curve_model(const std::string& name) {
  if (name == "twin") return twin::CurveModel::Twin;
  if (name == "quadratic") return twin::CurveModel::Quadratic;
  if (name == "cube") return twin::CurveModel::CubeLaw;
  throw Error(ErrorKind::InvalidArgument,
              "--model must be twin, quadratic or cube, got '" + name + "'");
}

twin::SweepFitReport fit_sweep_table(const std::string& sweep_path,
                                     const std::optional<std::string>& gpu_model, int fit_caps,
                                     const std::string& model) {
  const twin::CurveModel curve = parse_curve_model(model);
  return twin::fit_sweep(read_sweep_table(sweep_path).rows, gpu_model, fit_caps, curve);
}

nlohmann::json fit_json(const twin::SweepFitReport& report) {
  nlohmann::json ws = nlohmann::json::array();
  for (const auto& w : report.workloads)
    ws.push_back({{"workload", w.workload},
                  {"gpu", w.gpu},
                  {"fit_caps", w.fit_caps},
                  {"mape_energy_pct", or_null(w.mape_energy_pct)},
                  {"mape_time_pct", or_null(w.mape_time_pct)},
                  {"predicted_best_cap_W", w.predicted_best_cap_W},
                  {"measured_best_cap_W", w.measured_best_cap_W}});
  return {{"workloads", ws}, {"median_mape_energy_pct", or_null(report.median_mape_energy_pct)}};
}

}  // namespace regime::session
