#pragma once
// The options of `regime sim curve` and `regime sim fit`, typed once here: the session takes the
// caps as watts and the curve as a twin::CurveModel, and parses nothing.
#include <string>
#include <vector>

#include "session/sim/sim_curve.hpp"
#include "session/sim/sim_fit.hpp"

namespace regime::cli {

// `sim curve --caps`: "60,64.5,70", each a positive number of watts. Error InvalidArgument
// naming the first item that is not (plan::read_cap_list's items: one reader of cap lists).
std::vector<double> parse_caps(const std::string& list);

// `sim fit --model`: twin, quadratic or cube. Error InvalidArgument naming the accepted values.
twin::CurveModel parse_curve_model(const std::string& name);

}  // namespace regime::cli
