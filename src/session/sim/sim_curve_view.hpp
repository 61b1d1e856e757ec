#pragma once
// The presenters of `regime sim curve`: its JSON and its table, both built from the same SimCurve.
#include <nlohmann/json.hpp>
#include <string>

namespace regime::session {

struct SimCurve;

// {"gpu", "workload", "calibrated_caps_W", "points"}: a point where the GPU shuts down has null
// time, power and energy.
nlohmann::json to_json(const SimCurve& curve);

// The footnote for caps outside the twin's calibration ("" when every point is within it).
std::string extrapolation_note(const SimCurve& curve);

// One row per cap (time, power and energy per step, the energy's +-%, clock, temperature,
// utilization, what limits the clocks), then the footnote where a cap is extrapolated.
std::string to_text(const SimCurve& curve);

}  // namespace regime::session
