#include "session/sim/sim_fit.hpp"

#include "common/error.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

twin::SweepFitReport fit_sweep_table(const std::string& sweep_path,
                                     const std::optional<std::string>& gpu_model, int fit_caps,
                                     twin::CurveModel model) {
  return twin::fit_sweep(read_sweep_table(sweep_path).rows, gpu_model, fit_caps, model);
}

}  // namespace regime::session
