#pragma once
// `regime sim fit`: the GPU twin (or a yardstick curve) fitted to a few caps of each workload of a
// sweep table, predicting the rest (docs/twin.md). Its table and JSON:
// session/sim/sim_fit_view.hpp.
#include <optional>
#include <string>

#include "twin/sweep.hpp"

namespace regime::session {

// Fits every workload of the table at `sweep_path` from `fit_caps` of its caps. `gpu_model`
// overrides the table's gpu column; `model` is the curve fitted (the CLI reads --model). Errors as
// read_sweep_table and twin::fit_sweep.
twin::SweepFitReport fit_sweep_table(const std::string& sweep_path,
                                     const std::optional<std::string>& gpu_model, int fit_caps,
                                     twin::CurveModel model);

}  // namespace regime::session
