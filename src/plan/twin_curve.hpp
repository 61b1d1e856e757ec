#pragma once
// The model-guided adaptive search with the GPU twin as its curve: the twin's workload parameters
// are fitted (twin::fit_curve) to the probes so far, and it predicts time and power at the caps
// not yet measured.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan/search.hpp"
#include "twin/spec.hpp"

namespace regime::plan {

CurveFitter twin_curve_fitter(twin::GpuSpec spec);

// The twin fitter for a GPU named like the device or table ("V100", "Tesla T4", "sim:t4" models);
// the polynomial fitter (empty CurveFitter) when the twin has no spec for it.
CurveFitter curve_fitter_for(const std::string& gpu_name);

// Sets the adaptive search's curve for a GPU and the search settings chosen with that curve on
// the seen half of the Zeus sweeps (docs/twin.md, "Validation"): the twin where a spec exists,
// else the quadratic; with either, the second probe a quarter of the way up and the curve may end
// the search from 3 places on it.
void configure_curve(SearchOptions& opt, const std::string& gpu_name);
// The same from the model's spec as already looked up (twin::find_gpu_spec).
void configure_curve(SearchOptions& opt, const std::optional<twin::GpuSpec>& spec);

// Which curve the adaptive search predicts unmeasured caps with, and how far it trusts it: the
// twin of a spec, whose intervals are kUncalibratedFitExtraRel wider where the spec was not
// calibrated across its limit range (so the search measures a cap more often than it predicts it
// away), or the quadratic where the twin has no spec.
struct CurveNote {
  std::string model;              // "twin" or "quadratic"
  std::string gpu_spec;           // the spec's model ("v100"); empty for the quadratic
  bool spec_calibrated = false;   // the spec's constants were chosen across its limit range
  double interval_extra_pct = 0;  // what the twin adds to its intervals' base there
};
CurveNote curve_note(const std::optional<twin::GpuSpec>& spec);
nlohmann::json to_json(const CurveNote& note);
// One line for the search's report, e.g. "the twin of v100 (calibrated across its limit range)".
std::string to_text(const CurveNote& note);

}  // namespace regime::plan
