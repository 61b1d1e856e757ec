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

// Max-slowdown: time per step rises as the cap falls, so the lowest cap within the time bound
// brackets the search. The first probe goes where the bound usually falls (the default's draw x
// start_draw_fraction); from there the search gallops (steps 1, 2, 4 ...) towards the unknown side
// until a measured cap within the bound sits above a measured one past it, then bisects between
// them. Energy then decides among the caps within the bound: when the lowest feasible cap is the
// best measured and energy still falls to the cap under it, a curve that falls and then rises has
// its least energy there; otherwise (a knee, heat, a lucky row higher up) the search walks until
// the best cap's neighbours within the bound are both measured and worse. Returns why it stopped.
// `grid` is ascending: candidates, then the default.
template <class Measure>
std::string bisect_time_bound(const std::vector<double>& grid, size_t n_candidates,
                              const SearchOptions& opt, Measure&& measure,
                              const std::vector<ProbeResult>& probes) {
  const DecisionInputs& in = opt.decision;
  const Measurement& at_default = probes.front().measurement;
  const double t0 = at_default.time_per_step_s;
  const double bound_s = t0 * (1 + in.objective.max_slowdown_pct / 100);
  // Values, not references: a probe appends to `probes`.
  auto at = [&](size_t i) -> Measurement {
    int k = find_probe(probes, grid[i]);
    return k >= 0 ? probes[static_cast<size_t>(k)].measurement : measure(grid[i]).measurement;
  };
  auto measured = [&](size_t i) { return find_probe(probes, grid[i]) >= 0; };
  auto energy = [&](size_t i) { return at(i).energy_per_step_J; };

  // lo: the highest index known past the bound (-1: none); hi: the lowest known within it.
  long lo = -1, hi = static_cast<long>(n_candidates);
  const double start_W = opt.start_cap_W.value_or(at_default.avg_power_W * opt.start_draw_fraction);
  // The index in [first, last) whose cap is nearest `cap_W`; `best` (if any) keeps ties.
  auto nearest = [&](long first, long last, double cap_W, long best) {
    auto miss = [&](long i) { return std::abs(grid[static_cast<size_t>(i)] - cap_W); };
    for (long i = first; i < last; ++i)
      if (best < 0 || miss(i) < miss(best)) best = i;
    return best;
  };
  long next = start_W > 0 ? nearest(0, hi, start_W, (lo + hi) / 2) : (lo + hi) / 2;
  // Where the bound falls if time follows a power law of the cap under the default's draw,
  // t / t0 = (P0 / cap)^k, with k from the measured binding row whose slowdown is nearest the
  // bound: the grid index nearest that cap strictly between lo and hi, or -1 when no row says.
  const double draw_W = at_default.avg_power_W;
  auto predicted_crossing = [&](long lo_i, long hi_i) -> long {
    double k = 0, closest = kInf;
    for (const auto& p : probes) {
      const double r = p.measurement.time_per_step_s / t0;
      if (p.cap_W >= draw_W || r <= 1) continue;
      const double miss = std::abs(std::log(r * t0 / bound_s));
      if (miss < closest) {
        closest = miss;
        k = std::log(r) / std::log(draw_W / p.cap_W);
      }
    }
    if (!(k > 0)) return -1;
    return nearest(lo_i + 1, hi_i, draw_W * std::pow(bound_s / t0, -1 / k), -1);
  };
  long step = 1;
  while (hi - lo > 1) {
    const bool within = at(static_cast<size_t>(next)).time_per_step_s <= bound_s;
    (within ? hi : lo) = next;
    if (hi - lo <= 1) break;
    // Bracketed once a measured cap past the bound sits under a measured one within it (lo only
    // rises and hi only falls): bisect. Until then, gallop from the last probe.
    const long predicted = opt.predict_crossing ? predicted_crossing(lo, hi) : -1;
    if (predicted >= 0) {
      next = predicted;
    } else if (lo >= 0 && hi < static_cast<long>(n_candidates)) {
      next = (lo + hi) / 2;
    } else {
      next = within ? std::max(lo + 1, hi - step) : std::min(hi - 1, lo + step);
      step *= 2;
    }
  }
  // A row past the bound by less than the time noise may be a slow repeat of a cap within it:
  // the descent goes on under it, and ends on a row past the bound beyond the noise or on two
  // rows past it in a row.
  const double marginal_s = bound_s * (1 + opt.marginal_past_bound_sd * in.priors.time.rel_sd);
  while (lo >= 1 && at(static_cast<size_t>(lo)).time_per_step_s <= marginal_s) {
    if (at(static_cast<size_t>(lo - 1)).time_per_step_s > bound_s) break;
    hi = lo - 1;
    lo = hi - 1;
    while (lo >= 0 && at(static_cast<size_t>(lo)).time_per_step_s <= bound_s) hi = lo--;
  }
  const auto b = static_cast<size_t>(hi);
  if (b == n_candidates)
    return fmt::format(
        "no cap below the default keeps time per step within +{:g}% ({} W: {:+.1f}%)",
        in.objective.max_slowdown_pct, grid[n_candidates - 1],
        (at(n_candidates - 1).time_per_step_s / t0 - 1) * 100);

  // The best measured cap within the bound (the default included).
  auto best_within = [&] {
    size_t best = b;
    for (size_t i = b; i <= n_candidates; ++i)
      if (measured(i) && energy(i) < energy(best)) best = i;
    return best;
  };
  // An unmeasured neighbour of the best within the bound, or none (-1).
  auto open_neighbour = [&]() -> long {
    const size_t best = best_within();
    if (best + 1 <= n_candidates && !measured(best + 1)) return static_cast<long>(best + 1);
    if (best > b && !measured(best - 1)) return static_cast<long>(best - 1);
    return -1;
  };
  std::string why = fmt::format("the lowest cap within +{:g}% time is {} W",
                                in.objective.max_slowdown_pct, grid[b]);
  if (best_within() == b && lo >= 0 && energy(static_cast<size_t>(lo)) < energy(b)) {
    why += fmt::format(
        "; energy still falls to {} W under it, so no cap above {} W within the "
        "bound uses less",
        grid[static_cast<size_t>(lo)], grid[b]);
  } else if (best_within() == b && lo < 0 && !opt.check_above_lowest_cap) {
    why += " (the lowest cap)";
  } else {
    for (long i = open_neighbour(); i >= 0; i = open_neighbour()) at(static_cast<size_t>(i));
    why += fmt::format("; energy within the bound is least at {} W, both neighbours measured",
                       grid[best_within()]);
  }
  // The probe floor: rows enough for the binding test and the noise, spent where the best
  // measured cap is not yet bracketed, else on the unmeasured cap within the bound farthest from
  // every measured one (the first of them). Index distance from an unmeasured cap to the nearest
  // measured one within the bound.
  auto gap = [&](size_t i) {
    long d = static_cast<long>(n_candidates);
    for (size_t j = b; j <= n_candidates; ++j)
      if (measured(j)) d = std::min(d, std::abs(static_cast<long>(i) - static_cast<long>(j)));
    return d;
  };
  size_t extra = 0;
  while (probes.size() < opt.min_time_bound_probes) {
    long pick = open_neighbour();
    if (pick < 0) {
      long widest = 0;
      for (size_t i = b; i < n_candidates; ++i)
        if (!measured(i) && gap(i) > widest) {
          widest = gap(i);
          pick = static_cast<long>(i);
        }
    }
    if (pick < 0) break;
    at(static_cast<size_t>(pick));
    ++extra;
  }
  if (extra > 0)
    why += fmt::format(
        "; {} more cap{} within the bound measured to reach {} rows (the least "
        "the binding test and the noise estimate work with)",
        extra, extra == 1 ? "" : "s", opt.min_time_bound_probes);
  return why;
}

}  // namespace

// Regime-aware (search.hpp): the default and the pair's regime there, the caps that can bind, then
// the time bound bisected (max-slowdown) or a curve-guided walk (the other objectives).
SearchOutcome search_adaptive(SearchRun& run) {
  const SearchOptions& opt = run.options();
  const DecisionInputs& in = opt.decision;
  const std::vector<double>& caps = run.caps();
  SearchOutcome& out = run.outcome();
  auto measure = [&](double cap_W) -> const ProbeResult& { return run.measure(cap_W); };
  auto finish = [&](std::string why) { return run.finish(std::move(why)); };

  // 1. The default limit, and the pair's regime there.
  const Measurement at_default = measure(caps.front()).measurement;
  if (opt.classify) out.regime = opt.classify(at_default);
  if (out.regime && (*out.regime == Regime::Underutilized || *out.regime == Regime::Idle) &&
      !opt.force) {
    out.stop_reason = fmt::format(
        "the pair is {} at the default limit: capping is pointless (the waste is elsewhere); "
        "pass --force to search anyway",
        to_string(*out.regime));
    out.decision = keep_default_because(in.default_limit_W, out.stop_reason);
    return out;
  }

  // 2. Which caps can bind. From a live run, the default's power windows and reason counters
  //    say it (analysis/binding.hpp); from means alone (a replayed table), a cap below the mean
  //    draw binds for certain, and otherwise the lowest cap is measured: if its power does not
  //    fall below the default's beyond the noise, no cap between binds either.
  std::vector<double> grid;  // ascending: candidates, then the default
  const std::vector<double> lower(caps.begin() + 1, caps.end());
  const LiveBinding live = live_binding(at_default, lower, caps.front());
  const double draw_W = std::max(at_default.avg_power_W, at_default.p95_power_W);
  auto stop_nothing_binds = [&](std::string why) {
    out.no_cap_binds = true;
    out.stop_reason = std::move(why);
    out.decision = out.probes.size() > 1
                       ? decide(out.probes, in)
                       : keep_default_because(in.default_limit_W, out.stop_reason);
    return out;
  };
  if (!at_default.window_power_W.empty()) {
    for (const auto& c : live.caps)
      if (c.share >= kMinBindShare) grid.push_back(c.cap_W);
    if (grid.empty())
      return stop_nothing_binds(fmt::format(
          "no cap below the default would bind {:.0f}% of the time or more ({}), so none is "
          "measured",
          100 * kMinBindShare, live.summary));
  } else if (in.objective.kind == ObjectiveKind::MaxSlowdown) {
    // The time bound finds the caps worth measuring: every cap is a candidate, whatever the mean
    // draw (power peaks make caps above it bind).
    grid = lower;
  } else if (!lower.empty() && lower.back() < at_default.avg_power_W) {
    const double ceiling_W = draw_W * (1 + opt.headroom_margin);
    for (double cap : lower)
      if (cap < ceiling_W) grid.push_back(cap);
  } else if (!lower.empty()) {
    // Upward from the lowest cap while the trend is suggestive but not yet conclusive: more rows
    // at caps that do not bind measure the noise that decides it.
    TableBinding screen;
    for (auto it = lower.rbegin(); it != lower.rend(); ++it) {
      measure(*it);
      screen = table_binding(out.probes, in.priors.power, in.binding_alpha);
      if (screen.binds || screen.t < kSuggestiveTrendT) break;
    }
    if (!screen.binds)
      return stop_nothing_binds(fmt::format(
          "every cap is above the mean draw ({:.1f} W) and power does not fall below the "
          "default's beyond the noise from {} W down ({}): no cap binds",
          at_default.avg_power_W, lower.back(), screen.summary));
    grid = lower;
  }
  std::sort(grid.begin(), grid.end());
  if (grid.empty()) return stop_nothing_binds("no cap below the default to measure");
  size_t n_candidates = grid.size();
  grid.push_back(caps.front());

  if (in.objective.kind == ObjectiveKind::MaxSlowdown) {
    finish(bisect_time_bound(grid, n_candidates, opt, measure, out.probes));
    // Rows alone (a table): when power does not follow the cap, no cap binds.
    out.no_cap_binds = out.decision.binding && !out.decision.binding->binds;
    return out;
  }

  // 3. A first probe low in the range: on the Zeus data most optima lie in the lower third.
  auto second = static_cast<size_t>(
      std::lround(opt.second_probe_fraction * static_cast<double>(n_candidates - 1)));
  if (opt.start_cap_W)
    for (size_t i = 0; i < n_candidates; ++i)
      if (std::abs(grid[i] - *opt.start_cap_W) < std::abs(grid[second] - *opt.start_cap_W))
        second = i;
  if (find_probe(out.probes, grid[second]) < 0) measure(grid[second]);

  const CurveFitter fitter = opt.fitter ? opt.fitter : CurveFitter(fit_polynomial_curve);
  const ProbeResult dflt = out.probes.front();
  while (true) {
    size_t best = 0;
    for (size_t i = 1; i < out.probes.size(); ++i)
      if (score_or_inf(out.probes[i], dflt, in) < score_or_inf(out.probes[best], dflt, in))
        best = i;
    double best_score = score_or_inf(out.probes[best], dflt, in);
    auto pos = static_cast<size_t>(
        std::find_if(grid.begin(), grid.end(),
                     [&](double c) { return std::abs(c - out.probes[best].cap_W) < 0.05; }) -
        grid.begin());
    auto model = fitter(out.probes);
    double noise = in.noise_floor_rel;
    auto best_int = score_interval(in.objective, out.probes[best].measurement,
                                   dflt.measurement.time_per_step_s, in.max_power_W);
    if (best_int && best_score > 0) noise = (best_int->second - best_int->first) / 2 / best_score;
    if (model) noise = std::max(noise, model->rms_rel_residual());

    // One row's noise, the table's or the prior's, on energy and time alike: a score mixes both.
    const double row_noise = std::max({noise, in.priors.energy.rel_sd, in.priors.time.rel_sd});
    const std::vector<double> neighbours =
        open_caps_beside(grid, pos, out.probes, dflt, in, best_score * (1 + row_noise));
    if (neighbours.empty())
      return finish(fmt::format(
          "every cap beside the best cap {} W is measured up to one worse beyond the noise "
          "({:.1f}%)",
          out.probes[best].cap_W, row_noise * 100));

    double next = neighbours.front();
    double next_pred = kInf;
    std::optional<PredictedPoint> next_point;
    for (double c : neighbours) {
      double pred = kInf;
      std::optional<PredictedPoint> point;
      if (model) {
        point = model->predict(c);
        if (point) {
          auto s = score(in.objective, point->energy_per_step_J, point->time_per_step_s,
                         dflt.measurement.time_per_step_s, in.max_power_W);
          if (s) pred = *s;
        }
      }
      if (pred < next_pred || (next_pred == kInf && c <= next)) {
        next = c;
        next_pred = pred;
        next_point = point;
      }
    }
    // 4. Stop when the model says the next probe cannot beat the best beyond the noise: the whole
    //    interval of its prediction (the twin's, where it gives one) lies above the best score. A
    //    cap the curve cannot predict is measured, not skipped.
    //    Rows at caps above the draw repeat the default's: they count once, as the curve's
    //    flat top, so that a fit through a flat stretch and one row past a cliff (a straight
    //    line through two places) cannot rule out the minimum between them.
    const double spread = std::max(row_noise, next_point ? next_point->half_width_rel : 0.0);
    if (model && next_pred < kInf &&
        distinct_binding_caps(out.probes, draw_W) >= opt.min_probes_before_model_stop &&
        next_pred * (1 - spread) >= best_score)
      return finish(fmt::format(
          "the fitted curve predicts {} W at {:+.1f}%{} against the best cap {} W, beyond the "
          "noise ({:.1f}%)",
          next, (next_pred / best_score - 1) * 100, prediction_note(next_point),
          out.probes[best].cap_W, spread * 100));
    measure(next);
  }
}

}  // namespace regime::plan
