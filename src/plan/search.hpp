#pragma once
// Search strategies over a cap grid, made by name from one table (search_strategies(); each in its
// own file, plan/strategies.hpp): `exhaustive` measures every cap from the top down; `adaptive`
// is regime-aware (docs/sweep.md, "Strategies"). Under max-slowdown it bisects on the time bound
// (strategy_adaptive.cpp, bisect_time_bound); under the other objectives it is model-guided:
//  1. measure the default limit; if the pair is underutilized or idle, capping is pointless: stop
//     (unless forced);
//  2. caps that cannot bind are not measured: from a live run, those the default's power windows
//     reach under kMinBindShare of the time (analysis/binding.hpp); from means alone, caps above
//     the draw x 1.15 when some cap lies below the draw, else the lowest cap is measured and, if
//     its power does not fall below the default's beyond the noise, no cap binds;
//  3. measure one cap second_probe_fraction of the way up the remaining caps, then walk to the
//     cap beside the best so far that a curve fitted to the probes predicts best: on each side
//     the nearest unmeasured cap, unless a measured cap between scores worse beyond one row's
//     noise;
//  4. stop when no side is open, or the fitted curve (from enough places on it, caps above the
//     draw counted once) predicts that the next cap is worse than the best by more than the
//     noise and by more than the curve has already missed on this workload (so it cannot change
//     the decision); a figure extrapolated past the fitted caps never stops it;
//  5. before it keeps the default on its neighbours alone, measure once the cap the curve puts
//     best in the widest unmeasured stretch between measured caps (from means alone, over the
//     whole grid): a cost that is not unimodal can dip there; the walk goes on from it if it wins.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/measurement.hpp"
#include "plan/decision.hpp"
#include "plan/probe.hpp"

namespace regime::plan {

enum class Strategy { Exhaustive, Adaptive };
Strategy parse_strategy(const std::string& text);  // Error InvalidArgument naming the choices
std::string to_string(Strategy s);

// A curve of time and energy per step against the cap, fitted to the probes so far.
struct PredictedPoint {
  double time_per_step_s = 0;
  double energy_per_step_J = 0;
  // How far to trust it (twin curve: twin/uncertainty.hpp; 0 and false when the curve says nothing
  // about it): relative half-width of the interval on both figures, and whether the cap lies
  // outside the span of the caps the curve was fitted to.
  double half_width_rel = 0;
  bool extrapolated = false;
};
class CurveModel {
 public:
  virtual ~CurveModel() = default;
  virtual std::optional<PredictedPoint> predict(double cap_W) const = 0;
  // Relative RMS residual of the fit to the probes (0 for an exact fit).
  virtual double rms_rel_residual() const = 0;
};
// Fits a model to the probes; nullptr when there are too few of them.
using CurveFitter = std::function<std::unique_ptr<CurveModel>(const std::vector<ProbeResult>&)>;

// Least-squares polynomial in the cap (degree min(2, probes-1)) for time and energy separately.
std::unique_ptr<CurveModel> fit_polynomial_curve(const std::vector<ProbeResult>& probes);

// Chosen with bench/decisions.sh's cross-check (docs/sweep.md, "Cross-check").
inline constexpr double kTimeBoundStartDrawFraction = 0.8;
inline constexpr size_t kMinTimeBoundProbes = 3;
inline constexpr double kMarginalPastBoundSd = 0.5;

struct SearchOptions {
  Strategy strategy = Strategy::Adaptive;
  std::vector<double> caps;  // the grid, highest first; must contain the default limit
  DecisionInputs decision;
  bool force = false;                      // go on in an underutilized or idle pair
  double headroom_margin = kNoBindMargin;  // caps >= draw x (1 + margin) are not probed (adaptive)
  // Where in the remaining caps the second probe goes, and from how many probes on the curve may
  // end the search. These defaults are safe for any curve; plan::configure_curve sets the values
  // chosen for each curve on the seen half of the Zeus sweeps (docs/twin.md, "Validation").
  double second_probe_fraction = 0.34;
  size_t min_probes_before_model_stop = 4;
  // A predicted draw at the default limit (`regime sweep --prior`): the second probe goes to the
  // candidate cap nearest it instead of second_probe_fraction of the way up.
  std::optional<double> start_cap_W;
  // The pair's regime from the probe at the default limit (empty: not known, e.g. replay).
  std::function<std::optional<Regime>(const Measurement&)> classify;
  CurveFitter fitter;                                // empty: fit_polynomial_curve
  std::function<void(const ProbeResult&)> on_probe;  // called after each probe (progress)
  // Max-slowdown: when the lowest cap of the grid is within the time bound, measure its neighbour
  // too (a knee may put less energy there).
  bool check_above_lowest_cap = false;
  // Max-slowdown: without start_cap_W, the first cap measured is the one nearest the default's
  // draw x this fraction (where a +10% time bound usually falls), and the search measures at least
  // this many rows, the default's included (docs/sweep.md, "Strategies").
  double start_draw_fraction = kTimeBoundStartDrawFraction;
  size_t min_time_bound_probes = kMinTimeBoundProbes;
  // Max-slowdown: a row past the time bound by less than this many of the time noise's standard
  // deviations (the priors') does not end the descent alone: the cap under it is measured too
  // (0: any row past the bound ends it).
  double marginal_past_bound_sd = kMarginalPastBoundSd;
  // Max-slowdown: the next probe goes where a power law of the cap through the rows so far puts
  // the bound (t / t0 = (draw / cap)^k), when a binding row with a measurable slowdown gives k;
  // false: gallop and bisection by index alone.
  bool predict_crossing = true;
  // Measure the default limit again after the search (live sweeps: heat drifts under a sweep),
  // so the decision sees the drift between the two default windows.
  bool remeasure_default = false;
};

struct SearchOutcome {
  std::vector<ProbeResult> probes;  // in the order measured
  Decision decision;
  std::optional<Regime> regime;              // of the pair at the default limit, when classified
  std::string stop_reason;                   // why the search ended
  bool no_cap_binds = false;                 // it ended because no cap below the default can bind
  std::optional<ProbeResult> default_again;  // the default measured again at the end
};

// One search in progress: the grid (highest first, the default limit first) and the outcome so
// far. Strategies (plan/strategies.hpp) measure through it and end with finish().
class SearchRun {
 public:
  // Error InvalidArgument unless the grid holds the default limit as its highest cap.
  SearchRun(Prober& prober, const SearchOptions& opt);
  const SearchOptions& options() const { return opt_; }
  const std::vector<double>& caps() const { return caps_; }
  SearchOutcome& outcome() { return out_; }
  // Measures one cap (the options' on_probe sees it) and keeps the probe.
  const ProbeResult& measure(double cap_W);
  // Ends the search: the default measured again where the options ask, then the decision.
  SearchOutcome finish(std::string stop_reason);

 private:
  Prober& prober_;
  const SearchOptions& opt_;
  std::vector<double> caps_;
  SearchOutcome out_;
};

// A strategy by name: what `--strategy NAME` runs.
struct SearchStrategy {
  Strategy id;
  std::string_view name;
  std::string_view summary;
  SearchOutcome (*run)(SearchRun& run);
};
const std::vector<SearchStrategy>& search_strategies();

// Runs opt.strategy over the prober.
SearchOutcome search(Prober& prober, const SearchOptions& opt);

}  // namespace regime::plan
