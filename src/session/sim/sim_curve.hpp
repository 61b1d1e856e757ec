#pragma once
// `regime sim curve`: the GPU twin's steady state of a simulated workload at each of a list of
// caps, with the spec's uncertainty at each (docs/twin.md).
#include <string>
#include <vector>

#include "plan/cap_grid.hpp"  // plan::read_cap_list, which reads --caps at the CLI
#include "twin/model.hpp"
#include "twin/uncertainty.hpp"

namespace regime::session {

struct CurvePoint {
  double cap_W = 0;
  twin::SteadyState state;
  twin::Uncertainty uncertainty;
  std::string limited_by;  // what holds the clocks there, in words
};

struct SimCurve {
  std::string gpu_model;  // the spec's model, e.g. "t4"
  std::string gpu_name;   // the spec's full name
  std::string workload;
  double shutdown_temp_C = 0;
  std::vector<double> calibrated_caps_W;  // where the twin was calibrated (may be none)
  std::vector<CurvePoint> points;         // one per cap, in the order asked
};

// Error NotFound for an unknown GPU model or workload; OutOfRange for a cap outside the GPU's
// limit range.
SimCurve sim_curve(const std::string& gpu_model, const std::string& workload,
                   const std::vector<double>& caps_W);

}  // namespace regime::session
