#include "plan/decision.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "analysis/measure.hpp"
#include "analysis/reasons.hpp"
#include "analysis/statistics.hpp"
#include "common/error.hpp"

namespace regime::plan {

namespace {

double change_pct(double value, double reference) { return (value / reference - 1) * 100; }

// A share of the window that counts when deciding whether heat limited the default's clocks.
constexpr double kThermalShare = 0.05;

bool heat_limited(const Measurement& m) {
  for (const auto& [bit, share] : m.reason_fraction)
    if ((bit & kThermalReasons) && share >= kThermalShare) return true;
  return false;
}

// The objective's score without its constraint (max-slowdown's score is energy).
double raw_score(const Objective& o, double energy_J, double time_s, double max_power_W) {
  return *score(unconstrained(o), energy_J, time_s, time_s, max_power_W);
}

bool all_have_intervals(const std::vector<ProbeResult>& probes) {
  return std::all_of(probes.begin(), probes.end(),
                     [](const ProbeResult& p) { return has_intervals(p.measurement); });
}

std::string constraint_text(const Objective& o) {
  const auto bound = slowdown_bound_pct(o);
  return bound ? fmt::format(" within a {}% slowdown", *bound) : std::string();
}

Decision keep(double default_limit_W, std::string reason, Decision d) {
  d.cap_W = default_limit_W;
  d.keep_default = true;
  d.energy_change_pct = 0;
  d.time_change_pct = 0;
  d.reason = std::move(reason);
  return d;
}

// Where power does not follow the cap, every row repeats the default's measurement: the best of
// them differs from the default by scatter alone, and taking it would act on the luckiest repeat
// (a lower cap that does not bind cannot make work faster, yet such rows show it). The default is
// kept, and the reason gives the spread the rows do show: power across the caps, and the best
// row's energy and time against the default's row, beside the rows' noise.
Decision keep_where_no_cap_binds(const std::vector<ProbeResult>& rows, const TableBinding& tb,
                                 const NoiseEstimate& s_noise, const NoiseEstimate& t_noise,
                                 const DecisionInputs& in, Decision d) {
  double lo_W = rows.front().measurement.avg_power_W, hi_W = lo_W;
  for (const auto& r : rows) {
    lo_W = std::min(lo_W, r.measurement.avg_power_W);
    hi_W = std::max(hi_W, r.measurement.avg_power_W);
  }
  const Measurement& m0 = rows.front().measurement;
  size_t best = 0;
  double best_score =
      raw_score(in.objective, m0.energy_per_step_J, m0.time_per_step_s, in.max_power_W);
  for (size_t i = 1; i < rows.size(); ++i) {
    const Measurement& m = rows[i].measurement;
    const double s =
        raw_score(in.objective, m.energy_per_step_J, m.time_per_step_s, in.max_power_W);
    if (score(in.objective, m.energy_per_step_J, m.time_per_step_s, m0.time_per_step_s,
              in.max_power_W) &&
        s < best_score) {
      best = i;
      best_score = s;
    }
  }
  const std::string spread = fmt::format(
      "no cap binds: mean power stays within {:.1f}-{:.1f} W across the caps {}-{} W ({:.1f}% "
      "spread), so every row repeats the default's measurement",
      lo_W, hi_W, rows.back().cap_W, rows.front().cap_W, (hi_W / lo_W - 1) * 100);
  const Measurement& mb = rows[best].measurement;
  const std::string best_text =
      best == 0
          ? fmt::format("no row beats the default's own on {}{}", in.objective.text(),
                        constraint_text(in.objective))
          : fmt::format(
                "the best row, {} W (energy per step {:+.1f}%, time per step {:+.1f}%{}), differs "
                "from the default by noise ({:.1f}% per row on {}, {:.1f}% on time)",
                rows[best].cap_W, change_pct(mb.energy_per_step_J, m0.energy_per_step_J),
                change_pct(mb.time_per_step_s, m0.time_per_step_s),
                mb.time_per_step_s < m0.time_per_step_s
                    ? ": faster, and a cap that does not bind cannot speed work up"
                    : "",
                100 * s_noise.rel_sd, in.objective.text(), 100 * t_noise.rel_sd);
  return keep(in.default_limit_W,
              fmt::format("{}; {}: keeping the default limit {} W ({}; noise {})", spread,
                          best_text, in.default_limit_W, tb.summary, s_noise.describe()),
              std::move(d));
}

// "; 120 W not credited: why": the rows a decision set aside, as the reason lists them.
std::string not_credited_text(const std::vector<NotCredited>& not_credited) {
  std::string text;
  for (const auto& nc : not_credited)
    text += fmt::format("; {} W not credited: {}", nc.cap_W, nc.why);
  return text;
}

// ---- Single measurements per cap ----

// The rows at or under the default limit, highest cap first. Rows above the default (a table
// swept past a card's default limit) raise the limit: they are shown against the default, but a
// decision lowers the limit or keeps it, and the binding test reads power from the default down.
std::vector<ProbeResult> rows_from_default_down(const std::vector<ProbeResult>& probes,
                                                double default_limit_W) {
  std::vector<ProbeResult> rows;
  for (const ProbeResult& p : probes)
    if (p.cap_W <= default_limit_W + 0.05) rows.push_back(p);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProbeResult& a, const ProbeResult& b) { return a.cap_W > b.cap_W; });
  return rows;
}

// The rows as columns (index 0: the default's own row), with the objective's score free of its
// constraint, split by the binding test into rows that repeat the default and rows that bind.
struct RowColumns {
  std::vector<double> caps_W, energy_per_step_J, time_per_step_s, raw_score, avg_power_W;
  std::vector<size_t> repeats, binding;
};
RowColumns row_columns(const std::vector<ProbeResult>& rows, const TableBinding& tb,
                       const DecisionInputs& in) {
  RowColumns c;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Measurement& m = rows[i].measurement;
    c.caps_W.push_back(rows[i].cap_W);
    c.energy_per_step_J.push_back(m.energy_per_step_J);
    c.time_per_step_s.push_back(m.time_per_step_s);
    c.avg_power_W.push_back(m.avg_power_W);
    c.raw_score.push_back(
        raw_score(in.objective, m.energy_per_step_J, m.time_per_step_s, in.max_power_W));
    (tb.binds && rows[i].cap_W < tb.onset_cap_W ? c.binding : c.repeats).push_back(i);
  }
  return c;
}

// The default's level of a column: the geometric mean of the rows that repeat its measurement.
double default_level(const std::vector<double>& values, const std::vector<size_t>& repeats) {
  double s = 0;
  for (size_t i : repeats) s += std::log(values[i]);
  return std::exp(s / static_cast<double>(repeats.size()));
}

// How much more a row scatters about the level of n repeat rows than about the truth: the level
// carries noise of its own, sqrt(1 + 1/n).
double against_level_sd_factor(size_t n_repeats) {
  return std::sqrt(1 + 1 / static_cast<double>(n_repeats));
}

// What the rows say before a pick is made.
struct SingleEvidence {
  RowColumns rows;
  TableBinding binding;
  NoiseEstimate score_noise, time_noise;  // of one row
  bool default_heat_limited = false;      // the default's own throttle reasons say heat
};

// The binding rows faster than the default's level by more than `crit_log` (log scale).
std::vector<size_t> binding_rows_faster(const RowColumns& c, double level_time_per_step_s,
                                        double crit_log) {
  std::vector<size_t> faster;
  for (size_t i : c.binding)
    if (std::log(c.time_per_step_s[i] / level_time_per_step_s) < -crit_log) faster.push_back(i);
  return faster;
}

// The rows a decision may pick, and those set aside. A lower cap cannot speed work up unless heat
// held the default's clocks back: unless `hot`, a binding row in `faster` is an outlier, not
// credited. Binding rows come first, then the repeat rows other than the default's own (one of
// them may still be the best measured row); each within the objective's constraint.
struct CreditedRows {
  std::vector<size_t> candidates;
  std::vector<NotCredited> not_credited;
};
CreditedRows credited_rows(const RowColumns& c, const std::vector<size_t>& faster, bool hot,
                           double level_time_per_step_s, double crit_log,
                           const DecisionInputs& in) {
  CreditedRows out;
  const double t0 = c.time_per_step_s[0];
  auto admitted = [&](size_t i) {
    return score(in.objective, c.energy_per_step_J[i], c.time_per_step_s[i], t0, in.max_power_W)
        .has_value();
  };
  for (size_t i : c.binding) {
    if (!hot && std::find(faster.begin(), faster.end(), i) != faster.end()) {
      out.not_credited.push_back(
          {c.caps_W[i],
           fmt::format("time per step {:+.1f}% under a lower cap, beyond the noise "
                       "({:.1f}%): a cap cannot speed work up, so this row is noise",
                       change_pct(c.time_per_step_s[i], level_time_per_step_s), 100 * crit_log)});
      continue;
    }
    if (admitted(i)) out.candidates.push_back(i);
  }
  for (size_t i : c.repeats)
    if (i != 0 && admitted(i)) out.candidates.push_back(i);
  return out;
}

// The candidate with the best unconstrained score, the higher cap on ties; 0 (the default's own
// row) when none beats it.
size_t best_row(const RowColumns& c, const std::vector<size_t>& candidates) {
  const std::vector<double>& s = c.raw_score;
  size_t best = 0;
  for (size_t i : candidates)
    if (s[i] < s[best] || (s[i] == s[best] && c.caps_W[i] > c.caps_W[best])) best = i;
  return best;
}

// The log saving against the level a pick must exceed to beat the noise: the Student t quantile at
// 1 - alpha / candidates (Bonferroni) times one row's noise against the level.
double saving_threshold_log(const NoiseEstimate& score_noise, double decision_alpha,
                            size_t n_candidates, double sd_factor) {
  return student_t_quantile(1 - decision_alpha / static_cast<double>(n_candidates),
                            score_noise.dof) *
         score_noise.rel_sd * sd_factor;
}

// Whether a row shows by itself that its cap binds, where every measured cap lies above the
// default's draw (only its peaks can bind): the row draws less than the default beyond two rows'
// power noise. The hinge's trend can say caps bind while the chosen row draws what the default
// does.
bool row_shows_binding(const RowColumns& c, size_t i, const TableBinding& b) {
  return std::log(c.avg_power_W[0] / c.avg_power_W[i]) > b.row_drop_crit_log;
}

std::string unbound_row_text(const RowColumns& c, size_t i, const TableBinding& b) {
  return fmt::format(
      "it draws {:.1f} W against the default's {:.1f} W ({:+.1f}%, within the {:.1f}% a row "
      "must drop by to show a cap binding), and {} W is not under the {:.1f} W below which caps "
      "bind for certain",
      c.avg_power_W[i], c.avg_power_W[0], change_pct(c.avg_power_W[i], c.avg_power_W[0]),
      100 * (1 - std::exp(-b.row_drop_crit_log)), c.caps_W[i], b.certain_bind_W);
}

// The best measured row is the decision (on a table its rows are all there is to know); the
// keep-default threshold only says whether its saving beats the noise against the default's
// level. Percentages and the slowdown bound are against the default's own row: that is the row a
// table shows and the one a user compares with; a level pooled with other rows could hide a pick
// past the bound. A saving that rests on a default row slower than most binding rows
// (`hot_by_rows`) is not called beyond the noise: heat or an off row, the rows cannot tell which.
// Where every measured cap is above the default's draw, a saving within the noise at a row that
// does not itself show its cap binding keeps the default: the other rows' trend made the cap a
// candidate, but this row repeats the default's draw. (Where caps under the draw were measured,
// a within-noise pick near a clear onset stands: the binding is not in doubt there.)
Decision pick_row(const SingleEvidence& ev, size_t best, size_t n_candidates, bool hot_by_rows,
                  const std::string& evidence, const DecisionInputs& in, Decision d) {
  const RowColumns& c = ev.rows;
  const size_t n_repeats = c.repeats.size();
  const double s0 = default_level(c.raw_score, c.repeats);
  const double gain = std::log(s0 / c.raw_score[best]);
  const double threshold = saving_threshold_log(ev.score_noise, in.decision_alpha, n_candidates,
                                                against_level_sd_factor(n_repeats));
  const double score_pct = change_pct(c.raw_score[best], c.raw_score[0]);
  const double e_pct = change_pct(c.energy_per_step_J[best], c.energy_per_step_J[0]);
  const double t_pct = change_pct(c.time_per_step_s[best], c.time_per_step_s[0]);
  const std::string against =
      n_repeats > 1
          ? fmt::format(
                ", {:+.1f}% against the default's level (mean of the {} rows at caps that cannot "
                "bind)",
                change_pct(c.raw_score[best], s0), n_repeats)
          : std::string();
  const bool binds_here = c.caps_W[best] < ev.binding.onset_cap_W;
  if (binds_here && !(gain > threshold) && !ev.binding.cap_under_draw_measured &&
      !row_shows_binding(c, best, ev.binding))
    return keep(
        in.default_limit_W,
        fmt::format("{} W has the best {}{} ({:+.1f}% against the default {} W), within "
                    "the {:.1f}% a saving must exceed to beat the noise, and its own row "
                    "does not show its cap binding: {}: keeping the default limit {} W ({})",
                    c.caps_W[best], in.objective.text(), constraint_text(in.objective), score_pct,
                    in.default_limit_W, 100 * (1 - std::exp(-threshold)),
                    unbound_row_text(c, best, ev.binding), in.default_limit_W, evidence),
        std::move(d));
  d.cap_W = c.caps_W[best];
  d.keep_default = false;
  d.beyond_noise = binds_here && !hot_by_rows && gain > threshold;
  d.energy_change_pct = e_pct;
  d.time_change_pct = t_pct;
  d.reason = fmt::format(
      "{} W has the best {}{} ({:+.1f}% against the default {} W{}: energy per step {:+.1f}%, "
      "time per step {:+.1f}%), {} the {:.1f}% a saving must exceed to beat the noise{} ({})",
      c.caps_W[best], in.objective.text(), constraint_text(in.objective), score_pct,
      in.default_limit_W, against, e_pct, t_pct, d.beyond_noise ? "beyond" : "within",
      100 * (1 - std::exp(-threshold)),
      binds_here ? "" : "; it lies above where caps bind, so it repeats the default", evidence);
  return d;
}

// Where caps bind: the physics check, then the best credited row against the keep-default rule.
// A table carries no throttle reasons, so the rows say whether heat held the default back: one
// binding row faster than the default beyond the noise is an outlier (not credited); most of
// them faster means the default's own row is the slow one, as on a card that throttles on heat
// at its default, and they are credited.
Decision decide_binding_rows(const SingleEvidence& ev, const DecisionInputs& in, Decision d) {
  const RowColumns& c = ev.rows;
  const NoiseEstimate& t_noise = ev.time_noise;
  const double t_level = default_level(c.time_per_step_s, c.repeats);
  const double t_crit = student_t_quantile(1 - kPhysicsAlpha, t_noise.dof) * t_noise.rel_sd *
                        against_level_sd_factor(c.repeats.size());
  const std::vector<size_t> faster = binding_rows_faster(c, t_level, t_crit);
  const bool hot_by_rows = 2 * faster.size() > c.binding.size();
  CreditedRows credited =
      credited_rows(c, faster, ev.default_heat_limited || hot_by_rows, t_level, t_crit, in);
  d.not_credited = std::move(credited.not_credited);
  std::string set_aside = not_credited_text(d.not_credited);
  if (hot_by_rows)
    set_aside += fmt::format(
        "; {} of {} binding rows run faster than the default beyond the noise ({:.1f}%): the "
        "default behaves as a card held back by heat (or its row is off; measure it again to "
        "tell), so they are taken as measured",
        faster.size(), c.binding.size(), 100 * t_crit);
  const std::string evidence =
      fmt::format("{}; noise {}{}", ev.binding.summary, ev.score_noise.describe(), set_aside);
  const size_t best = best_row(c, credited.candidates);
  if (best == 0)
    return keep(in.default_limit_W,
                fmt::format("no cap measured beats the default's own row on {}{} ({}): keeping "
                            "the default limit {} W",
                            in.objective.text(), constraint_text(in.objective), evidence,
                            in.default_limit_W),
                std::move(d));
  return pick_row(ev, best, credited.candidates.size(), hot_by_rows, evidence, in, std::move(d));
}

// Single measurements per cap: the binding test, the default's level from the rows that repeat
// it, the noise from the table, the physics check, then the keep-default rule.
Decision decide_single(const std::vector<ProbeResult>& probes, const DecisionInputs& in) {
  const std::vector<ProbeResult> rows = rows_from_default_down(probes, in.default_limit_W);
  if (rows.size() < 2)
    return keep_default_because(in.default_limit_W,
                                fmt::format("no cap under the default limit {} W was measured: "
                                            "nothing to compare",
                                            in.default_limit_W));
  Decision d;
  d.basis = "single measurements";
  SingleEvidence ev;
  ev.binding = table_binding(rows, in.priors.power, in.binding_alpha);
  d.binding = ev.binding;
  ev.rows = row_columns(rows, ev.binding, in);
  // The noise of one row: the scatter of the rows that repeat the default, and the table's.
  const RowColumns& c = ev.rows;
  ev.score_noise = relative_noise(c.caps_W, c.raw_score, c.repeats, {}, in.priors.energy);
  ev.time_noise = relative_noise(c.caps_W, c.time_per_step_s, c.repeats, {}, in.priors.time);
  d.noise = ev.score_noise;
  d.time_noise = ev.time_noise;
  if (!ev.binding.binds)
    return keep_where_no_cap_binds(rows, ev.binding, ev.score_noise, ev.time_noise, in,
                                   std::move(d));
  ev.default_heat_limited = heat_limited(rows.front().measurement);
  return decide_binding_rows(ev, in, std::move(d));
}

// ---- Probes with intervals: power windows say which caps bind, the intervals decide ----

// Both default windows as one estimate: the mean of the two, its interval covering both.
Measurement merge_defaults(const Measurement& a, const Measurement& b) {
  Measurement m = a;
  m.energy_per_step_J = 0.5 * (a.energy_per_step_J + b.energy_per_step_J);
  m.time_per_step_s = 0.5 * (a.time_per_step_s + b.time_per_step_s);
  m.avg_power_W = 0.5 * (a.avg_power_W + b.avg_power_W);
  m.energy_per_step_ci_J = {std::min(a.energy_per_step_ci_J.first, b.energy_per_step_ci_J.first),
                            std::max(a.energy_per_step_ci_J.second, b.energy_per_step_ci_J.second)};
  m.time_per_step_ci_s = {std::min(a.time_per_step_ci_s.first, b.time_per_step_ci_s.first),
                          std::max(a.time_per_step_ci_s.second, b.time_per_step_ci_s.second)};
  return m;
}

// Widens a measurement's intervals by `rel` on each side (time only where it has one).
void widen(Measurement& m, double rel) {
  m.energy_per_step_ci_J = {m.energy_per_step_ci_J.first * (1 - rel),
                            m.energy_per_step_ci_J.second * (1 + rel)};
  if (m.time_per_step_ci_s.second > m.time_per_step_ci_s.first)
    m.time_per_step_ci_s = {m.time_per_step_ci_s.first * (1 - rel),
                            m.time_per_step_ci_s.second * (1 + rel)};
}

// What every figure is per: "second" when any window is an accepted per-second one (no step
// markers), else "step".
std::string per_unit(const std::vector<ProbeResult>& probes) {
  return std::any_of(probes.begin(), probes.end(),
                     [](const ProbeResult& p) { return p.measurement.per_second; })
             ? "second"
             : "step";
}

// The change from the default's first window to its second, measured after the sweep.
Drift default_drift(const Measurement& first, const Measurement& again) {
  return Drift{change_pct(again.energy_per_step_J, first.energy_per_step_J),
               change_pct(again.time_per_step_s, first.time_per_step_s), first, again};
}

// The probes with the drift folded in (`drift_rel`: its relative energy change): the caps were
// measured somewhere between the two default windows, so the default's estimate spans both and
// every other interval widens by half the drift.
std::vector<ProbeResult> probes_across_drift(std::vector<ProbeResult> probes, int d_idx,
                                             const Measurement& again, double drift_rel) {
  const Measurement first = probes[static_cast<size_t>(d_idx)].measurement;
  for (size_t i = 0; i < probes.size(); ++i)
    if (static_cast<int>(i) != d_idx) widen(probes[i].measurement, drift_rel / 2);
  probes[static_cast<size_t>(d_idx)].measurement = merge_defaults(first, again);
  return probes;
}

// The share of the time the default's power windows reach `cap_W` (0 when it was not asked about).
double window_share_at(const LiveBinding& lb, double cap_W) {
  double share = 0;
  for (const auto& c : lb.caps)
    if (std::abs(c.cap_W - cap_W) < 0.05) share = c.share;
  return share;
}

// Whether a probe's time interval lies wholly under the default's by more than the physics
// tolerance: faster than any cap can make work (both intervals must be known).
bool faster_than_a_cap_allows(const Interval& probe_s, const Interval& default_s) {
  return probe_s.second > probe_s.first && default_s.second > default_s.first &&
         probe_s.second < default_s.first * (1 - kPhysicsToleranceRel);
}

// The probe with the best score among those credited (the default's when none beats it; the
// higher cap on ties), and those set aside: caps the default's power windows reach under
// kMinBindShare of the time (listed only where they would have led), and, unless heat limited the
// default, caps faster than a cap allows.
struct BestProbe {
  int index = 0;
  double score = 0;
  std::vector<NotCredited> not_credited;
};
BestProbe best_credited_probe(const std::vector<ProbeResult>& probes, int d_idx,
                              const LiveBinding& lb, const DecisionInputs& in,
                              const std::string& per) {
  const ProbeResult& dflt = probes[static_cast<size_t>(d_idx)];
  const bool windows = !dflt.measurement.window_power_W.empty();
  const bool hot = heat_limited(dflt.measurement);
  const Interval dt = dflt.measurement.time_per_step_ci_s;
  BestProbe best{d_idx, *probe_score(dflt, dflt, in), {}};
  for (size_t i = 0; i < probes.size(); ++i) {
    if (static_cast<int>(i) == d_idx) continue;
    const ProbeResult& p = probes[i];
    auto s = probe_score(p, dflt, in);
    if (!s) continue;
    if (const double share = window_share_at(lb, p.cap_W); windows && share < kMinBindShare) {
      if (*s < best.score)
        best.not_credited.push_back(
            {p.cap_W, fmt::format("the default's power windows reach it only {:.0f}% of the "
                                  "time (< {:.0f}%): it barely binds, so a difference there is "
                                  "noise or drift",
                                  100 * share, 100 * kMinBindShare)});
      continue;
    }
    const Interval pt = p.measurement.time_per_step_ci_s;
    if (!hot && faster_than_a_cap_allows(pt, dt)) {
      best.not_credited.push_back(
          {p.cap_W, fmt::format("time per {} [{:.4g}, {:.4g}] s lies more than 1% below the "
                                "default's [{:.4g}, {:.4g}] s: a cap cannot speed work up, so "
                                "this is noise or drift",
                                per, pt.first, pt.second, dt.first, dt.second)});
      continue;
    }
    if (*s < best.score || (*s == best.score && p.cap_W > probes[best.index].cap_W)) {
      best.index = static_cast<int>(i);
      best.score = *s;
    }
  }
  return best;
}

// The best probe's score interval against the default's: a saving counts only where it lies
// wholly below. `evidence` says so with the numbers.
struct IntervalVerdict {
  bool beats = false;
  std::string evidence;
};
IntervalVerdict interval_verdict(const Measurement& best, const Measurement& dflt,
                                 const DecisionInputs& in, const std::string& set_aside) {
  auto b_int = score_interval(in.objective, best, dflt.time_per_step_s, in.max_power_W);
  auto d_int = score_interval(in.objective, dflt, dflt.time_per_step_s, in.max_power_W);
  IntervalVerdict v;
  v.beats = b_int && d_int && b_int->second < d_int->first;
  v.evidence = fmt::format("{} score interval [{:.4g}, {:.4g}] {} the default's [{:.4g}, {:.4g}]{}",
                           in.objective.text(), b_int ? b_int->first : 0.0,
                           b_int ? b_int->second : 0.0, v.beats ? "lies below" : "overlaps",
                           d_int ? d_int->first : 0.0, d_int ? d_int->second : 0.0, set_aside);
  return v;
}

// The keep-default rule on probes with intervals (the drift already folded in): the best
// credited cap is chosen only if its score interval lies wholly below the default's.
Decision decide_on_intervals(const std::vector<ProbeResult>& probes, int d_idx,
                             const DecisionInputs& in, const std::string& per, Decision d) {
  const std::string obj = in.objective.text();
  const ProbeResult& dflt = probes[static_cast<size_t>(d_idx)];
  const Measurement& dm = dflt.measurement;
  std::vector<double> caps;
  for (const auto& p : probes) caps.push_back(p.cap_W);
  const LiveBinding lb = live_binding(dm, caps, in.default_limit_W);
  if (lb.available) d.live_binding = lb;
  BestProbe best = best_credited_probe(probes, d_idx, lb, in, per);
  d.not_credited = std::move(best.not_credited);
  const std::string set_aside = not_credited_text(d.not_credited);
  if (best.index == d_idx)
    return keep(in.default_limit_W,
                fmt::format("no cap measured beats the default limit {} W on {}{}{}",
                            in.default_limit_W, obj, constraint_text(in.objective), set_aside),
                std::move(d));
  const ProbeResult& b = probes[static_cast<size_t>(best.index)];
  const double e_pct = change_pct(b.measurement.energy_per_step_J, dm.energy_per_step_J);
  const double t_pct = change_pct(b.measurement.time_per_step_s, dm.time_per_step_s);
  const double score_pct = change_pct(best.score, *probe_score(dflt, dflt, in));
  const IntervalVerdict v = interval_verdict(b.measurement, dm, in, set_aside);
  if (!v.beats)
    return keep(in.default_limit_W,
                fmt::format("best cap {} W changes {} by {:+.1f}% (energy {:+.1f}%, time "
                            "{:+.1f}%), within the uncertainty ({}); keeping the default limit "
                            "{} W",
                            b.cap_W, obj, score_pct, e_pct, t_pct, v.evidence, in.default_limit_W),
                std::move(d));
  d.cap_W = b.cap_W;
  d.keep_default = false;
  d.beyond_noise = true;
  d.energy_change_pct = e_pct;
  d.time_change_pct = t_pct;
  d.reason = fmt::format(
      "{} W has the best {}{} ({:+.1f}% against the default {} W: energy per {} {:+.1f}%, "
      "time per {} {:+.1f}%); {}",
      b.cap_W, obj, constraint_text(in.objective), score_pct, in.default_limit_W, per, e_pct, per,
      t_pct, v.evidence);
  return d;
}

// Probes with intervals. A live sweep that measured the default again has the drift between the
// two windows folded in first; past kMaxDriftRel the card changed under the sweep too much for
// any comparison to hold, and the default is kept.
Decision decide_intervals(const std::vector<ProbeResult>& probes_in, int d_idx,
                          const DecisionInputs& in) {
  const std::string per = per_unit(probes_in);
  Decision d;
  d.basis = "intervals";
  if (!in.default_again) return decide_on_intervals(probes_in, d_idx, in, per, std::move(d));
  const Drift drift =
      default_drift(probes_in[static_cast<size_t>(d_idx)].measurement, *in.default_again);
  d.drift = drift;
  const double rel = std::abs(drift.energy_pct) / 100;
  if (rel > kMaxDriftRel)
    return keep(in.default_limit_W,
                fmt::format("the default measured first and last differs by {:+.1f}% in energy "
                            "per {} (more than {:.0f}%): the card changed under the sweep "
                            "(heat, other work), so no comparison holds; keeping the default "
                            "limit {} W. Let it settle longer (--max-settle-s) and sweep again",
                            drift.energy_pct, per, 100 * kMaxDriftRel, in.default_limit_W),
                std::move(d));
  return decide_on_intervals(probes_across_drift(probes_in, d_idx, *in.default_again, rel), d_idx,
                             in, per, std::move(d));
}

Decision decide_one(const std::vector<ProbeResult>& probes, int d_idx, const DecisionInputs& in) {
  if (probes.size() == 1)
    return keep_default_because(in.default_limit_W,
                                fmt::format("only the default limit {} W was measured: nothing "
                                            "to compare",
                                            in.default_limit_W));
  return all_have_intervals(probes) ? decide_intervals(probes, d_idx, in)
                                    : decide_single(probes, in);
}

// Every ratio of the decision divides by a time or an energy per step: one that is 0 or not a
// finite number (zero-length steps, a window without energy) would make a NaN compare as a
// saving. Such a sweep is not decided; "" when every measurement can be compared.
std::string undecidable_probes(const std::vector<ProbeResult>& probes, const DecisionInputs& in) {
  auto cannot = [&](const std::string& where, const std::string& why) {
    return fmt::format(
        "cannot decide: {} {}, so no cap can be compared with the default; "
        "keeping the default limit {} W",
        where, why, in.default_limit_W);
  };
  for (const ProbeResult& p : probes)
    if (std::string why = undecidable_figure(p.measurement); !why.empty())
      return cannot(fmt::format("at {} W", p.cap_W), why);
  if (in.default_again)
    if (std::string why = undecidable_figure(*in.default_again); !why.empty())
      return cannot("in the default measured again", why);
  return "";
}

nlohmann::json alternative_json(const Alternative& a) {
  return {{"objective", a.objective},
          {"cap_W", a.cap_W},
          {"keep_default", a.keep_default},
          {"energy_change_pct", a.energy_change_pct},
          {"time_change_pct", a.time_change_pct},
          {"how", a.how}};
}

}  // namespace

nlohmann::json to_json(const Decision& d) {
  nlohmann::json j{{"cap_W", d.cap_W},
                   {"keep_default", d.keep_default},
                   {"saving_beyond_noise", d.beyond_noise},
                   {"energy_change_pct", d.energy_change_pct},
                   {"time_change_pct", d.time_change_pct},
                   {"reason", d.reason}};
  nlohmann::json ev = nlohmann::json::object();
  if (!d.basis.empty()) ev["basis"] = d.basis;
  if (d.binding) ev["binding"] = to_json(*d.binding);
  if (d.noise) ev["noise"] = to_json(*d.noise);
  if (d.time_noise) ev["time_noise"] = to_json(*d.time_noise);
  if (d.live_binding) ev["live_binding"] = to_json(*d.live_binding);
  if (!d.not_credited.empty()) {
    ev["not_credited"] = nlohmann::json::array();
    for (const auto& nc : d.not_credited)
      ev["not_credited"].push_back({{"cap_W", nc.cap_W}, {"why", nc.why}});
  }
  j["evidence"] = ev;
  j["unconstrained"] = d.unconstrained ? alternative_json(*d.unconstrained) : nullptr;
  if (d.drift) j["evidence"]["drift"] = to_json(*d.drift);
  return j;
}

nlohmann::json to_json(const Drift& d) {
  auto window = [](const Measurement& m) {
    return nlohmann::json{
        {"energy_per_step_J", m.energy_per_step_J},
        {"energy_per_step_ci_J", {m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second}},
        {"time_per_step_s", m.time_per_step_s},
        {"time_per_step_ci_s", {m.time_per_step_ci_s.first, m.time_per_step_ci_s.second}},
        {"avg_power_W", m.avg_power_W},
        {"per", m.per_second ? "second" : "step"},
        {"mean_temp_C", m.mean_temp_C ? nlohmann::json(*m.mean_temp_C) : nullptr}};
  };
  return {{"energy_pct", d.energy_pct},
          {"time_pct", d.time_pct},
          {"first", window(d.first)},
          {"second", window(d.second)}};
}

std::optional<Measurement> default_again_from(const nlohmann::json& decision) {
  // A kept decision is read back from a store, which anyone may have written: a window that is
  // not whole, of the wrong types or not finite is no window.
  Measurement m;
  try {
    const nlohmann::json& w = decision.at("evidence").at("drift").at("second");
    auto pair = [](const nlohmann::json& v) {
      return Interval{v.at(0).get<double>(), v.at(1).get<double>()};
    };
    m.energy_per_step_J = w.at("energy_per_step_J").get<double>();
    m.energy_per_step_ci_J = pair(w.at("energy_per_step_ci_J"));
    m.time_per_step_s = w.at("time_per_step_s").get<double>();
    if (w.contains("time_per_step_ci_s")) m.time_per_step_ci_s = pair(w.at("time_per_step_ci_s"));
    m.avg_power_W = w.value("avg_power_W", 0.0);
    m.per_second = w.value("per", "step") == "second";
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  for (double v :
       {m.energy_per_step_J, m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second,
        m.time_per_step_s, m.time_per_step_ci_s.first, m.time_per_step_ci_s.second, m.avg_power_W})
    if (!std::isfinite(v)) return std::nullopt;
  return m;
}

int find_probe(const std::vector<ProbeResult>& probes, double cap_W) {
  for (size_t i = 0; i < probes.size(); ++i)
    if (std::abs(probes[i].cap_W - cap_W) < 0.05) return static_cast<int>(i);
  return -1;
}

Decision keep_default_because(double default_limit_W, const std::string& reason) {
  Decision d;
  d.cap_W = default_limit_W;
  d.keep_default = true;
  d.reason = reason;
  return d;
}

std::optional<double> probe_score(const ProbeResult& p, const ProbeResult& at_default,
                                  const DecisionInputs& in) {
  return score(in.objective, p.measurement.energy_per_step_J, p.measurement.time_per_step_s,
               at_default.measurement.time_per_step_s, in.max_power_W);
}

Decision decide(const std::vector<ProbeResult>& probes, const DecisionInputs& in) {
  const int d_idx = find_probe(probes, in.default_limit_W);
  if (d_idx < 0)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("no measurement at the default limit {} W: a decision compares every "
                            "cap against it",
                            in.default_limit_W));
  if (std::string why = undecidable_probes(probes, in); !why.empty())
    return keep_default_because(in.default_limit_W, std::move(why));
  Decision d = decide_one(probes, d_idx, in);
  if (slowdown_bound_pct(in.objective) && probes.size() > 1) {
    DecisionInputs free = in;
    free.objective = unconstrained(in.objective);
    const Decision u = decide_one(probes, d_idx, free);
    const std::string name = free.objective.text();
    d.unconstrained = Alternative{name,
                                  u.cap_W,
                                  u.keep_default,
                                  u.energy_change_pct,
                                  u.time_change_pct,
                                  "--objective " + name};
  }
  return d;
}

}  // namespace regime::plan
