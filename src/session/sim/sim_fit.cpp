#include "session/sim/sim_fit.hpp"

#include "common/error.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

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

}  // namespace regime::session
