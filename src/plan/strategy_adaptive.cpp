#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "analysis/binding.hpp"
#include "plan/evidence.hpp"
#include "plan/strategies.hpp"

namespace regime::plan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A trend this strong (t of the binding test) is worth more rows before the search gives up.
constexpr double kSuggestiveTrendT = 2.0;

// " (+-12%, extrapolated)": how far the curve's figure can be trusted, when the curve says.
std::string prediction_note(const std::optional<PredictedPoint>& p) {
  if (!p || !(p->half_width_rel > 0)) return "";
  return fmt::format(" (+-{:.0f}%{})", 100 * p->half_width_rel,
                     p->extrapolated ? ", extrapolated" : "");
}

double score_or_inf(const ProbeResult& p, const ProbeResult& dflt, const DecisionInputs& in) {
  auto s = probe_score(p, dflt, in);
  return s ? *s : kInf;
}

// The caps the walk may measure next: on each side of the best cap (grid index `pos`), the nearest
// unmeasured cap, unless a measured cap between them scores worse than `worse_than`. A measured
// neighbour within the noise of the best does not close its side: on a flat stretch (caps that
// barely bind, or repeats of the default) one noisy row would otherwise end the walk before it
// reaches the caps that do save.
std::vector<double> open_caps_beside(const std::vector<double>& grid, size_t pos,
                                     const std::vector<ProbeResult>& probes,
                                     const ProbeResult& dflt, const DecisionInputs& in,
                                     double worse_than) {
  std::vector<double> open;
  for (const long dir : {-1L, 1L}) {
    for (long i = static_cast<long>(pos) + dir; i >= 0 && i < static_cast<long>(grid.size());
         i += dir) {
      const int k = find_probe(probes, grid[static_cast<size_t>(i)]);
      if (k < 0) {
        open.push_back(grid[static_cast<size_t>(i)]);
        break;
      }
      if (score_or_inf(probes[static_cast<size_t>(k)], dflt, in) > worse_than) break;
    }
  }
  return open;
}

// How many places on the curve the probes fix: each cap under the draw is one, and every cap at
// or above it (the default's included) together one more, since they repeat the default's row.
size_t distinct_binding_caps(const std::vector<ProbeResult>& probes, double draw_W) {
  size_t under = 0;
  bool at_top = false;
  for (const auto& p : probes) {
    if (p.cap_W < draw_W)
      ++under;
    else
      at_top = true;
  }
  return under + (at_top ? 1 : 0);
}

// ---- Max-slowdown: the time bound bisected ----

// The rows of the time-bound search by grid index (ascending: candidates, then the default),
// measured on first use. Rows are returned as values, not references: a probe appends to the
// outcome's probes.
class GridRows {
 public:
  GridRows(SearchRun& run, const std::vector<double>& grid) : run_(run), grid_(grid) {}
  const std::vector<double>& grid() const { return grid_; }
  const std::vector<ProbeResult>& probes() const { return run_.outcome().probes; }
  bool measured(size_t i) const { return find_probe(probes(), grid_[i]) >= 0; }
  Measurement at(size_t i) {
    const int k = find_probe(probes(), grid_[i]);
    return k >= 0 ? probes()[static_cast<size_t>(k)].measurement
                  : run_.measure(grid_[i]).measurement;
  }
  double time_per_step_s(size_t i) { return at(i).time_per_step_s; }
  double energy_per_step_J(size_t i) { return at(i).energy_per_step_J; }

 private:
  SearchRun& run_;
  const std::vector<double>& grid_;
};

// Grid indices around the time bound: lo, the highest known past it (-1: none); hi, the lowest
// known within it (the default's index when none below it is).
struct Bracket {
  long lo = -1;
  long hi = 0;
};

// The slowest time per step the objective allows: the default's x (1 + max slowdown).
double time_bound_s(double default_time_per_step_s, double max_slowdown_pct) {
  return default_time_per_step_s * (1 + max_slowdown_pct / 100);
}

// The index in [first, last) whose cap is nearest `cap_W`; `best` (-1: none) wins ties.
long nearest_cap_index(const std::vector<double>& grid, long first, long last, double cap_W,
                       long best) {
  auto miss = [&](long i) { return std::abs(grid[static_cast<size_t>(i)] - cap_W); };
  for (long i = first; i < last; ++i)
    if (best < 0 || miss(i) < miss(best)) best = i;
  return best;
}

// The exponent k of time per step as a power law of the cap under the default's draw,
// t / t0 = (P0 / cap)^k, from the binding row whose slowdown is nearest the bound; 0 when no
// binding row is slower than the default.
double power_law_exponent(const std::vector<ProbeResult>& probes, double t0_s, double draw_W,
                          double bound_s) {
  double k = 0, closest = kInf;
  for (const auto& p : probes) {
    const double r = p.measurement.time_per_step_s / t0_s;
    if (p.cap_W >= draw_W || r <= 1) continue;
    const double miss = std::abs(std::log(r * t0_s / bound_s));
    if (miss < closest) {
      closest = miss;
      k = std::log(r) / std::log(draw_W / p.cap_W);
    }
  }
  return k;
}

// Where the power law through the rows puts the bound: the grid index nearest that cap strictly
// inside the bracket, or -1 when no row gives the law.
long predicted_crossing_index(const std::vector<double>& grid,
                              const std::vector<ProbeResult>& probes, const Measurement& at_default,
                              double bound_s, Bracket br) {
  const double t0 = at_default.time_per_step_s, draw_W = at_default.avg_power_W;
  const double k = power_law_exponent(probes, t0, draw_W, bound_s);
  if (!(k > 0)) return -1;
  return nearest_cap_index(grid, br.lo + 1, br.hi, draw_W * std::pow(bound_s / t0, -1 / k), -1);
}

// The first cap the time-bound search measures: the one nearest the start cap (the prior's, or
// the default's draw x start_draw_fraction), else the middle of the bracket.
long first_time_bound_index(const std::vector<double>& grid, Bracket br,
                            const Measurement& at_default, const SearchOptions& opt) {
  const double start_W = opt.start_cap_W.value_or(at_default.avg_power_W * opt.start_draw_fraction);
  const long middle = (br.lo + br.hi) / 2;
  return start_W > 0 ? nearest_cap_index(grid, 0, br.hi, start_W, middle) : middle;
}

// The next probe and gallop step: the predicted crossing where the rows give one; else, once a
// measured cap past the bound sits under a measured one within it, the bracket's middle; else a
// gallop of `step` from the last probe towards the unknown side, the step doubling.
struct NextProbe {
  long index = 0;
  long step = 1;
};
NextProbe next_time_bound_probe(Bracket br, bool last_within, long predicted, size_t n_candidates,
                                long step) {
  if (predicted >= 0) return {predicted, step};
  if (br.lo >= 0 && br.hi < static_cast<long>(n_candidates)) return {(br.lo + br.hi) / 2, step};
  const long index =
      last_within ? std::max(br.lo + 1, br.hi - step) : std::min(br.hi - 1, br.lo + step);
  return {index, step * 2};
}

// Gallop, then bisect, until the lowest cap within the bound sits right above one past it (or
// the grid ends). lo only rises and hi only falls.
Bracket bracket_time_bound(GridRows& rows, size_t n_candidates, const Measurement& at_default,
                           double bound_s, const SearchOptions& opt) {
  Bracket br{-1, static_cast<long>(n_candidates)};
  long next = first_time_bound_index(rows.grid(), br, at_default, opt);
  long step = 1;
  while (br.hi - br.lo > 1) {
    const bool within = rows.time_per_step_s(static_cast<size_t>(next)) <= bound_s;
    (within ? br.hi : br.lo) = next;
    if (br.hi - br.lo <= 1) break;
    const long predicted =
        opt.predict_crossing
            ? predicted_crossing_index(rows.grid(), rows.probes(), at_default, bound_s, br)
            : -1;
    const NextProbe np = next_time_bound_probe(br, within, predicted, n_candidates, step);
    next = np.index;
    step = np.step;
  }
  return br;
}

// A row past the bound by less than the time noise may be a slow repeat of a cap within it: the
// descent goes on under it, and ends on a row past the bound beyond the noise (slower than
// `marginal_s`) or on two rows past it in a row.
Bracket descend_past_marginal_rows(GridRows& rows, Bracket br, double bound_s, double marginal_s) {
  while (br.lo >= 1 && rows.time_per_step_s(static_cast<size_t>(br.lo)) <= marginal_s) {
    if (rows.time_per_step_s(static_cast<size_t>(br.lo - 1)) > bound_s) break;
    br.hi = br.lo - 1;
    br.lo = br.hi - 1;
    while (br.lo >= 0 && rows.time_per_step_s(static_cast<size_t>(br.lo)) <= bound_s)
      br.hi = br.lo--;
  }
  return br;
}

// The best measured cap within the bound (from index `lowest` up to the default's): least
// energy per step, the lowest cap on ties.
size_t least_energy_within(GridRows& rows, size_t lowest, size_t n_candidates) {
  size_t best = lowest;
  for (size_t i = lowest; i <= n_candidates; ++i)
    if (rows.measured(i) && rows.energy_per_step_J(i) < rows.energy_per_step_J(best)) best = i;
  return best;
}

// An unmeasured neighbour of the best cap within the bound (the one above first), or -1.
long open_neighbour_within(GridRows& rows, size_t lowest, size_t n_candidates) {
  const size_t best = least_energy_within(rows, lowest, n_candidates);
  if (best + 1 <= n_candidates && !rows.measured(best + 1)) return static_cast<long>(best + 1);
  if (best > lowest && !rows.measured(best - 1)) return static_cast<long>(best - 1);
  return -1;
}

// Energy decides among the caps within the bound: when the lowest of them is the best measured
// and energy still falls to the cap under it, a curve that falls and then rises has its least
// energy there; otherwise (a knee, heat, a lucky row higher up) the walk goes on until the best
// cap's neighbours within the bound are both measured. Returns why the walk stopped.
std::string settle_energy_within_bound(GridRows& rows, Bracket br, size_t n_candidates,
                                       const SearchOptions& opt) {
  const std::vector<double>& grid = rows.grid();
  const auto b = static_cast<size_t>(br.hi);
  std::string why = fmt::format("the lowest cap within +{:g}% time is {} W",
                                opt.decision.objective.max_slowdown_pct, grid[b]);
  const bool lowest_is_best = least_energy_within(rows, b, n_candidates) == b;
  if (lowest_is_best && br.lo >= 0 &&
      rows.energy_per_step_J(static_cast<size_t>(br.lo)) < rows.energy_per_step_J(b))
    return why + fmt::format(
                     "; energy still falls to {} W under it, so no cap above {} W within the "
                     "bound uses less",
                     grid[static_cast<size_t>(br.lo)], grid[b]);
  if (lowest_is_best && br.lo < 0 && !opt.check_above_lowest_cap) return why + " (the lowest cap)";
  for (long i = open_neighbour_within(rows, b, n_candidates); i >= 0;
       i = open_neighbour_within(rows, b, n_candidates))
    rows.at(static_cast<size_t>(i));
  return why + fmt::format("; energy within the bound is least at {} W, both neighbours measured",
                           grid[least_energy_within(rows, b, n_candidates)]);
}

// Index distance from cap `i` to the nearest measured cap within the bound (from index `lowest`
// up to the default's); n_candidates when none is.
long gap_to_measured(const GridRows& rows, size_t i, size_t lowest, size_t n_candidates) {
  long d = static_cast<long>(n_candidates);
  for (size_t j = lowest; j <= n_candidates; ++j)
    if (rows.measured(j)) d = std::min(d, std::abs(static_cast<long>(i) - static_cast<long>(j)));
  return d;
}

// The unmeasured candidate within the bound farthest from every measured cap (the lowest of
// them on ties), or -1 when every one is measured.
long widest_gap_index(const GridRows& rows, size_t lowest, size_t n_candidates) {
  long pick = -1, widest = 0;
  for (size_t i = lowest; i < n_candidates; ++i)
    if (!rows.measured(i) && gap_to_measured(rows, i, lowest, n_candidates) > widest) {
      widest = gap_to_measured(rows, i, lowest, n_candidates);
      pick = static_cast<long>(i);
    }
  return pick;
}

// The probe floor: rows enough for the binding test and the noise, spent where the best measured
// cap is not yet bracketed, else where the caps within the bound are least covered. Returns how
// many caps it measured.
size_t measure_probe_floor(GridRows& rows, size_t lowest, size_t n_candidates, size_t min_probes) {
  size_t extra = 0;
  while (rows.probes().size() < min_probes) {
    long pick = open_neighbour_within(rows, lowest, n_candidates);
    if (pick < 0) pick = widest_gap_index(rows, lowest, n_candidates);
    if (pick < 0) break;
    rows.at(static_cast<size_t>(pick));
    ++extra;
  }
  return extra;
}

// Max-slowdown: time per step rises as the cap falls, so the lowest cap within the time bound
// brackets the search. The first probe goes where the bound usually falls (the default's draw x
// start_draw_fraction); from there the search gallops (steps 1, 2, 4 ...) towards the unknown side
// until a measured cap within the bound sits above a measured one past it, then bisects between
// them. Energy then decides among the caps within the bound (settle_energy_within_bound), and the
// probe floor tops the rows up. Returns why it stopped. `grid` is ascending: candidates, then the
// default.
std::string bisect_time_bound(SearchRun& run, const std::vector<double>& grid,
                              size_t n_candidates) {
  const SearchOptions& opt = run.options();
  const DecisionInputs& in = opt.decision;
  const Measurement at_default = run.outcome().probes.front().measurement;
  const double t0 = at_default.time_per_step_s;
  const double bound_s = time_bound_s(t0, in.objective.max_slowdown_pct);
  const double marginal_s = bound_s * (1 + opt.marginal_past_bound_sd * in.priors.time.rel_sd);
  GridRows rows(run, grid);
  const Bracket br = descend_past_marginal_rows(
      rows, bracket_time_bound(rows, n_candidates, at_default, bound_s, opt), bound_s, marginal_s);
  if (br.hi == static_cast<long>(n_candidates))
    return fmt::format(
        "no cap below the default keeps time per step within +{:g}% ({} W: {:+.1f}%)",
        in.objective.max_slowdown_pct, grid[n_candidates - 1],
        (rows.time_per_step_s(n_candidates - 1) / t0 - 1) * 100);
  std::string why = settle_energy_within_bound(rows, br, n_candidates, opt);
  const size_t extra = measure_probe_floor(rows, static_cast<size_t>(br.hi), n_candidates,
                                           opt.min_time_bound_probes);
  if (extra > 0)
    why += fmt::format(
        "; {} more cap{} within the bound measured to reach {} rows (the least "
        "the binding test and the noise estimate work with)",
        extra, extra == 1 ? "" : "s", opt.min_time_bound_probes);
  return why;
}

// ---- Which caps can bind ----

// Capping is pointless for a pair underutilized or idle at the default: its waste is elsewhere.
bool capping_is_pointless(const std::optional<Regime>& regime) {
  return regime && (*regime == Regime::Underutilized || *regime == Regime::Idle);
}

// The caps a live run's power windows reach at least kMinBindShare of the time.
std::vector<double> caps_binding_live(const LiveBinding& live) {
  std::vector<double> caps_W;
  for (const auto& c : live.caps)
    if (c.share >= kMinBindShare) caps_W.push_back(c.cap_W);
  return caps_W;
}

// The caps under `ceiling_W` (the draw and its headroom): those at or above it cannot bind.
std::vector<double> caps_under(const std::vector<double>& caps_W, double ceiling_W) {
  std::vector<double> under;
  for (double cap : caps_W)
    if (cap < ceiling_W) under.push_back(cap);
  return under;
}

// Every cap above the mean draw: measured upward from the lowest while the binding test's trend is
// suggestive but not yet conclusive, since more rows at caps that do not bind measure the noise
// that decides it. Returns the last test (`lower` is not empty).
TableBinding screen_from_lowest_cap(SearchRun& run, const std::vector<double>& lower) {
  const DecisionInputs& in = run.options().decision;
  TableBinding screen;
  for (auto it = lower.rbegin(); it != lower.rend(); ++it) {
    run.measure(*it);
    screen = table_binding(run.outcome().probes, in.priors.power, in.binding_alpha);
    if (screen.binds || screen.t < kSuggestiveTrendT) break;
  }
  return screen;
}

// The caps below the default worth measuring, ascending; empty, with why, when none can bind.
struct Candidates {
  std::vector<double> caps_W;
  std::string none_bind_why;
};

// From a live run, the default's power windows and reason counters say which caps bind
// (analysis/binding.hpp); from means alone (a replayed table), a cap below the mean draw binds for
// certain, and otherwise the lowest cap is measured: if its power does not fall below the
// default's beyond the noise, no cap between binds either. Max-slowdown takes every cap: its time
// bound finds the ones worth measuring (power peaks make caps above the mean draw bind).
Candidates candidate_caps(SearchRun& run, const Measurement& at_default, double draw_W) {
  const SearchOptions& opt = run.options();
  const std::vector<double>& caps = run.caps();
  const std::vector<double> lower(caps.begin() + 1, caps.end());
  Candidates c;
  if (!at_default.window_power_W.empty()) {
    const LiveBinding live = live_binding(at_default, lower, caps.front());
    c.caps_W = caps_binding_live(live);
    if (c.caps_W.empty())
      c.none_bind_why = fmt::format(
          "no cap below the default would bind {:.0f}% of the time or more ({}), so none is "
          "measured",
          100 * kMinBindShare, live.summary);
  } else if (slowdown_bound_pct(opt.decision.objective)) {
    c.caps_W = lower;
  } else if (!lower.empty() && lower.back() < at_default.avg_power_W) {
    c.caps_W = caps_under(lower, draw_W * (1 + opt.headroom_margin));
  } else if (!lower.empty()) {
    const TableBinding screen = screen_from_lowest_cap(run, lower);
    if (screen.binds)
      c.caps_W = lower;
    else
      c.none_bind_why = fmt::format(
          "every cap is above the mean draw ({:.1f} W) and power does not fall below the "
          "default's beyond the noise from {} W down ({}): no cap binds",
          at_default.avg_power_W, lower.back(), screen.summary);
  }
  std::sort(c.caps_W.begin(), c.caps_W.end());
  if (c.caps_W.empty() && c.none_bind_why.empty())
    c.none_bind_why = "no cap below the default to measure";
  return c;
}

// Ends a search in which no cap binds: the decision from the rows measured, or the default kept
// when it is the only one.
SearchOutcome stop_where_nothing_binds(SearchOutcome& out, const DecisionInputs& in,
                                       std::string why) {
  out.no_cap_binds = true;
  out.stop_reason = std::move(why);
  out.decision = out.probes.size() > 1 ? decide(out.probes, in)
                                       : keep_default_because(in.default_limit_W, out.stop_reason);
  return out;
}

// ---- The other objectives: a curve-guided walk ----

// The walk's first cap: second_probe_fraction of the way up the candidates (on the Zeus data
// most optima lie in the lower third), or the candidate nearest the prior's start cap.
size_t second_probe_index(const std::vector<double>& grid, size_t n_candidates,
                          const SearchOptions& opt) {
  auto second = static_cast<size_t>(
      std::lround(opt.second_probe_fraction * static_cast<double>(n_candidates - 1)));
  if (opt.start_cap_W)
    for (size_t i = 0; i < n_candidates; ++i)
      if (std::abs(grid[i] - *opt.start_cap_W) < std::abs(grid[second] - *opt.start_cap_W))
        second = i;
  return second;
}

// The probe with the best score so far (the first of ties; inf where the constraint fails).
size_t best_probe_index(const std::vector<ProbeResult>& probes, const ProbeResult& dflt,
                        const DecisionInputs& in) {
  size_t best = 0;
  for (size_t i = 1; i < probes.size(); ++i)
    if (score_or_inf(probes[i], dflt, in) < score_or_inf(probes[best], dflt, in)) best = i;
  return best;
}

// The grid index of `cap_W` (within 0.05 W); grid.size() when it is not on the grid.
size_t grid_index_of(const std::vector<double>& grid, double cap_W) {
  return static_cast<size_t>(
      std::find_if(grid.begin(), grid.end(), [&](double c) { return std::abs(c - cap_W) < 0.05; }) -
      grid.begin());
}

// One row's relative noise on the score: the best row's own interval (else the noise floor), no
// less than the curve's residual, nor than the priors on energy and time (a score mixes both).
double row_noise_rel(const std::optional<Interval>& best_interval, double best_score,
                     const CurveModel* model, const DecisionInputs& in) {
  double noise = in.noise_floor_rel;
  if (best_interval && best_score > 0)
    noise = (best_interval->second - best_interval->first) / 2 / best_score;
  if (model) noise = std::max(noise, model->rms_rel_residual());
  return std::max({noise, in.priors.energy.rel_sd, in.priors.time.rel_sd});
}

// A cap with the score the curve predicts there: inf when the curve cannot predict it or the
// prediction breaks the objective's constraint.
struct PredictedCap {
  double cap_W = 0;
  double score = kInf;
  std::optional<PredictedPoint> point;
};
PredictedCap predict_cap(double cap_W, const CurveModel* model, const ProbeResult& dflt,
                         const DecisionInputs& in) {
  PredictedCap p{cap_W, kInf, std::nullopt};
  if (!model) return p;
  p.point = model->predict(cap_W);
  if (!p.point) return p;
  auto s = score(in.objective, p.point->energy_per_step_J, p.point->time_per_step_s,
                 dflt.measurement.time_per_step_s, in.max_power_W);
  if (s) p.score = *s;
  return p;
}

// The open cap the curve predicts best; where it predicts none, the first (the lower side).
PredictedCap most_promising_cap(const std::vector<double>& open_caps_W, const CurveModel* model,
                                const ProbeResult& dflt, const DecisionInputs& in) {
  PredictedCap next{open_caps_W.front(), kInf, std::nullopt};
  for (double c : open_caps_W) {
    PredictedCap p = predict_cap(c, model, dflt, in);
    if (p.score < next.score || (next.score == kInf && c <= next.cap_W)) next = std::move(p);
  }
  return next;
}

// The curve's stop rule: from enough places on the curve (rows at caps above the draw repeat the
// default's and count once, as its flat top, so that a line through a flat stretch and one row
// past a cliff cannot rule out the minimum between them), the whole interval of the next cap's
// prediction, `spread` wide, lies above the best score. A cap the curve cannot predict, or only
// extrapolates to (past the caps it was fitted on, where its interval understates the miss), is
// measured, not skipped.
bool curve_rules_out(const PredictedCap& next, double spread, double best_score,
                     size_t places_on_curve, size_t min_places) {
  const bool extrapolated = next.point && next.point->extrapolated;
  return next.score < kInf && !extrapolated && places_on_curve >= min_places &&
         next.score * (1 - spread) >= best_score;
}

// How far the curve has missed on this workload: the largest relative miss of its score at a cap
// it predicted before the cap was measured (0 before any such cap).
double curve_miss_rel(const PredictedCap& predicted, const ProbeResult& measured,
                      const ProbeResult& dflt, const DecisionInputs& in, double so_far) {
  const double got = score_or_inf(measured, dflt, in);
  if (!(predicted.score < kInf) || !(got < kInf) || !(got > 0)) return so_far;
  return std::max(so_far, std::abs(predicted.score / got - 1));
}

// The widest run of unmeasured caps between two measured ones on `grid` (ascending); empty when
// no run holds two caps or more (a single one between two measured caps is a neighbour the walk
// has already judged).
std::vector<double> widest_unmeasured_stretch(const std::vector<double>& grid,
                                              const std::vector<ProbeResult>& probes) {
  std::vector<double> run, widest;
  bool after_measured = false;
  for (double cap : grid) {
    if (find_probe(probes, cap) >= 0) {
      if (after_measured && run.size() > widest.size()) widest = run;
      run.clear();
      after_measured = true;
    } else if (after_measured) {
      run.push_back(cap);
    }
  }
  return widest.size() >= 2 ? widest : std::vector<double>{};
}

// The cap of a stretch the curve predicts best; the middle one where it predicts none.
PredictedCap curve_best_in(const std::vector<double>& stretch_W, const CurveModel* model,
                           const ProbeResult& dflt, const DecisionInputs& in) {
  const PredictedCap best = most_promising_cap(stretch_W, model, dflt, in);
  if (best.score < kInf) return best;
  return {stretch_W[(stretch_W.size() - 1) / 2], kInf, std::nullopt};
}

// The walk's caps, ascending: those it walks (the candidates, then the default) and the whole
// grid the one probe of an unexplored stretch may reach (from means alone, the caps the headroom
// left out: peaks make some of them bind).
struct WalkGrid {
  std::vector<double> walked;
  std::vector<double> reachable;
};

// Before the walk keeps the default on its neighbours alone: one cap of the widest unmeasured
// stretch between measured caps, where the curve puts the stretch's best. When that cap beats the
// default, the walk goes on over every cap it may reach. Returns the note for the stop reason,
// empty when no stretch holds two caps.
std::string probe_widest_stretch(SearchRun& run, WalkGrid& wg, const CurveModel* model,
                                 double& curve_miss) {
  const std::vector<ProbeResult>& probes = run.outcome().probes;
  const DecisionInputs& in = run.options().decision;
  const ProbeResult dflt = probes.front();  // a copy: measuring grows the probes
  const std::vector<double> stretch = widest_unmeasured_stretch(wg.reachable, probes);
  if (stretch.empty()) return "";
  const PredictedCap pick = curve_best_in(stretch, model, dflt, in);
  curve_miss = curve_miss_rel(pick, run.measure(pick.cap_W), dflt, in, curve_miss);
  const bool beats = best_probe_index(probes, dflt, in) == probes.size() - 1;
  if (beats) wg.walked = wg.reachable;
  return fmt::format(
      "; with the default best on its neighbours alone, {} W was measured in the unmeasured "
      "stretch {}-{} W (the curve's best there) and {} the default",
      pick.cap_W, stretch.front(), stretch.back(), beats ? "beat" : "did not beat");
}

// Walks from the best cap so far to the open neighbour the curve predicts best, until every cap
// beside the best is measured up to a worse one, or the curve rules the next one out. The curve's
// own misses on the caps it predicted widen its stop: a curve that has been wrong here by more
// than the noise is not trusted to rule out the next cap by less. A walk that would keep the
// default on its neighbours alone first measures one cap in the widest unmeasured stretch between
// measured caps (where the curve puts the best): a cost that is not unimodal (a knee, heat, peaks
// that make caps above the draw bind) can dip there while the caps beside the default rise.
SearchOutcome walk_to_best_cap(SearchRun& run, WalkGrid wg, double draw_W) {
  const SearchOptions& opt = run.options();
  const DecisionInputs& in = opt.decision;
  const std::vector<ProbeResult>& probes = run.outcome().probes;
  const CurveFitter fitter = opt.fitter ? opt.fitter : CurveFitter(fit_polynomial_curve);
  const ProbeResult dflt = probes.front();
  std::vector<double>& grid = wg.walked;
  const double spread_share = objective_entry(in.objective.kind).curve_stop_spread_share;
  double curve_miss = 0;
  bool stretch_looked = false;
  std::string stretch_note;
  while (true) {
    const size_t best = best_probe_index(probes, dflt, in);
    const double best_score = score_or_inf(probes[best], dflt, in);
    const double best_cap_W = probes[best].cap_W;
    const auto model = fitter(probes);
    const double row_noise =
        row_noise_rel(score_interval(in.objective, probes[best].measurement,
                                     dflt.measurement.time_per_step_s, in.max_power_W),
                      best_score, model.get(), in);
    const std::vector<double> neighbours = open_caps_beside(
        grid, grid_index_of(grid, best_cap_W), probes, dflt, in, best_score * (1 + row_noise));
    if (neighbours.empty() && !stretch_looked && best == 0) {
      stretch_looked = true;
      stretch_note = probe_widest_stretch(run, wg, model.get(), curve_miss);
      if (!stretch_note.empty()) continue;
    }
    if (neighbours.empty())
      return run.finish(fmt::format(
          "every cap beside the best cap {} W is measured up to one worse beyond the noise "
          "({:.1f}%){}",
          best_cap_W, row_noise * 100, stretch_note));
    const PredictedCap next = most_promising_cap(neighbours, model.get(), dflt, in);
    const double spread =
        spread_share *
        std::max({row_noise, next.point ? next.point->half_width_rel : 0.0, curve_miss});
    if (model && curve_rules_out(next, spread, best_score, distinct_binding_caps(probes, draw_W),
                                 opt.min_probes_before_model_stop))
      return run.finish(fmt::format(
          "the fitted curve predicts {} W at {:+.1f}%{} against the best cap {} W, beyond {} "
          "the noise{} ({:.1f}%){}",
          next.cap_W, (next.score / best_score - 1) * 100, prediction_note(next.point), best_cap_W,
          spread_share < 1 ? fmt::format("{:g} x", spread_share) : std::string("all of"),
          curve_miss > 0 ? " and its misses at the caps it predicted" : "", spread * 100,
          stretch_note));
    curve_miss = curve_miss_rel(next, run.measure(next.cap_W), dflt, in, curve_miss);
  }
}

}  // namespace

// Regime-aware (search.hpp): the default and the pair's regime there, the caps that can bind, then
// the time bound bisected (max-slowdown) or a curve-guided walk (the other objectives).
SearchOutcome search_adaptive(SearchRun& run) {
  const SearchOptions& opt = run.options();
  const DecisionInputs& in = opt.decision;
  const std::vector<double>& caps = run.caps();
  SearchOutcome& out = run.outcome();

  // 1. The default limit, and the pair's regime there.
  const Measurement at_default = run.measure(caps.front()).measurement;
  if (opt.classify) out.regime = opt.classify(at_default);
  if (capping_is_pointless(out.regime) && !opt.force) {
    out.stop_reason = fmt::format(
        "the pair is {} at the default limit: capping is pointless (the waste is elsewhere); "
        "pass --force to search anyway",
        to_string(*out.regime));
    out.decision = keep_default_because(in.default_limit_W, out.stop_reason);
    return out;
  }

  // 2. Which caps can bind: the grid, ascending, is the candidates, then the default.
  const double draw_W = std::max(at_default.avg_power_W, at_default.p95_power_W);
  Candidates candidates = candidate_caps(run, at_default, draw_W);
  if (!candidates.none_bind_why.empty())
    return stop_where_nothing_binds(out, in, std::move(candidates.none_bind_why));
  std::vector<double> grid = std::move(candidates.caps_W);
  const size_t n_candidates = grid.size();
  grid.push_back(caps.front());

  if (slowdown_bound_pct(in.objective)) {
    run.finish(bisect_time_bound(run, grid, n_candidates));
    // Rows alone (a table): when power does not follow the cap, no cap binds.
    out.no_cap_binds = out.decision.binding && !out.decision.binding->binds;
    return out;
  }

  // 3. A first probe low in the range, then 4. the walk.
  const size_t second = second_probe_index(grid, n_candidates, opt);
  if (find_probe(out.probes, grid[second]) < 0) run.measure(grid[second]);
  std::vector<double> reachable = grid;
  if (at_default.window_power_W.empty()) reachable.assign(caps.rbegin(), caps.rend());
  return walk_to_best_cap(run, WalkGrid{std::move(grid), std::move(reachable)}, draw_W);
}

}  // namespace regime::plan
