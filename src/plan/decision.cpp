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
  Objective free = o;
  if (o.kind == ObjectiveKind::MaxSlowdown) free.kind = ObjectiveKind::Energy;
  return *score(free, energy_J, time_s, time_s, max_power_W);
}

bool all_have_intervals(const std::vector<ProbeResult>& probes) {
  return std::all_of(probes.begin(), probes.end(),
                     [](const ProbeResult& p) { return has_intervals(p.measurement); });
}

std::string constraint_text(const Objective& o) {
  return o.kind == ObjectiveKind::MaxSlowdown
             ? fmt::format(" within a {}% slowdown", o.max_slowdown_pct)
             : std::string();
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

// Single measurements per cap: the binding test, the default's level from the rows that repeat
// it, the noise from the table, the physics check, then the keep-default rule.
Decision decide_single(const std::vector<ProbeResult>& probes_in, const DecisionInputs& in) {
  // Rows above the default (a table swept past a card's default limit) raise the limit: they are
  // shown against the default, but a decision lowers the limit or keeps it, and the binding test
  // reads power from the default down.
  std::vector<ProbeResult> rows;
  for (const ProbeResult& p : probes_in)
    if (p.cap_W <= in.default_limit_W + 0.05) rows.push_back(p);
  if (rows.size() < 2)
    return keep_default_because(in.default_limit_W,
                                fmt::format("no cap under the default limit {} W was measured: "
                                            "nothing to compare",
                                            in.default_limit_W));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProbeResult& a, const ProbeResult& b) { return a.cap_W > b.cap_W; });
  const std::string obj = in.objective.text();
  Decision d;
  d.basis = "single measurements";
  const TableBinding tb = table_binding(rows, in.priors.power, in.binding_alpha);
  d.binding = tb;

  const size_t n = rows.size();
  std::vector<double> caps, energy, time, score_raw;
  std::vector<size_t> repeats, binding;
  for (size_t i = 0; i < n; ++i) {
    const Measurement& m = rows[i].measurement;
    caps.push_back(rows[i].cap_W);
    energy.push_back(m.energy_per_step_J);
    time.push_back(m.time_per_step_s);
    score_raw.push_back(
        raw_score(in.objective, m.energy_per_step_J, m.time_per_step_s, in.max_power_W));
    (tb.binds && rows[i].cap_W < tb.onset_cap_W ? binding : repeats).push_back(i);
  }
  // The default's level: the geometric mean of the rows that repeat its measurement.
  auto level = [&](const std::vector<double>& v) {
    double s = 0;
    for (size_t i : repeats) s += std::log(v[i]);
    return std::exp(s / static_cast<double>(repeats.size()));
  };
  const double s0 = level(score_raw);
  // Percentages and the slowdown bound are against the default's own row: that is the row a
  // table shows and the one a user compares with; a level pooled with other rows could hide a
  // pick past the bound. The level only judges whether a saving beats the noise.
  const double e0 = energy[0], t0 = time[0];
  const double t_level = level(time);
  // The noise of one row: the scatter of the rows that repeat the default, and the table's.
  const NoiseEstimate s_noise = relative_noise(caps, score_raw, repeats, {}, in.priors.energy);
  const NoiseEstimate t_noise = relative_noise(caps, time, repeats, {}, in.priors.time);
  d.noise = s_noise;
  d.time_noise = t_noise;
  const double k = std::sqrt(1 + 1 / static_cast<double>(repeats.size()));
  const std::string level_text =
      repeats.size() > 1
          ? fmt::format("the default's level (mean of the {} rows at caps that cannot bind)",
                        repeats.size())
          : fmt::format("the default {} W", in.default_limit_W);

  if (!tb.binds) return keep_where_no_cap_binds(rows, tb, s_noise, t_noise, in, std::move(d));

  // A lower cap cannot speed work up unless heat held the default's clocks back. A table carries
  // no throttle reasons, so the rows say which: one binding row faster than the default beyond
  // the noise is an outlier (not credited); most of them faster means the default's own row is
  // the slow one, as on a card that throttles on heat at its default, and they are credited.
  const double t_crit = student_t_quantile(1 - kPhysicsAlpha, t_noise.dof) * t_noise.rel_sd * k;
  std::vector<size_t> faster;
  for (size_t i : binding)
    if (std::log(time[i] / t_level) < -t_crit) faster.push_back(i);
  const bool hot_by_rows = 2 * faster.size() > binding.size();
  const bool hot = heat_limited(rows.front().measurement) || hot_by_rows;
  std::vector<size_t> candidates;
  for (size_t i : binding) {
    if (!hot && std::find(faster.begin(), faster.end(), i) != faster.end()) {
      d.not_credited.push_back(
          {caps[i], fmt::format("time per step {:+.1f}% under a lower cap, beyond the noise "
                                "({:.1f}%): a cap cannot speed work up, so this row is noise",
                                change_pct(time[i], t_level), 100 * t_crit)});
      continue;
    }
    if (!score(in.objective, energy[i], time[i], t0, in.max_power_W)) continue;
    candidates.push_back(i);
  }
  std::string not_credited_text;
  for (const auto& nc : d.not_credited)
    not_credited_text += fmt::format("; {} W not credited: {}", nc.cap_W, nc.why);
  if (hot_by_rows)
    not_credited_text += fmt::format(
        "; {} of {} binding rows run faster than the default beyond the noise ({:.1f}%): the "
        "default behaves as a card held back by heat (or its row is off; measure it again to "
        "tell), so they are taken as measured",
        faster.size(), binding.size(), 100 * t_crit);
  const std::string evidence =
      fmt::format("{}; noise {}{}", tb.summary, s_noise.describe(), not_credited_text);

  // Rows above the onset repeat the default; one of them may still be the best measured row.
  for (size_t i : repeats)
    if (i != 0 && score(in.objective, energy[i], time[i], t0, in.max_power_W))
      candidates.push_back(i);
  size_t best = 0;
  for (size_t i : candidates)
    if (score_raw[i] < score_raw[best] || (score_raw[i] == score_raw[best] && caps[i] > caps[best]))
      best = i;
  if (best == 0)
    return keep(in.default_limit_W,
                fmt::format("no cap measured beats the default's own row on {}{} ({}): keeping "
                            "the default limit {} W",
                            obj, constraint_text(in.objective), evidence, in.default_limit_W),
                std::move(d));
  // The best measured row is the decision (on a table its rows are all there is to know); the
  // keep-default threshold only says whether its saving beats the noise against the level.
  const double gain = std::log(s0 / score_raw[best]);
  const double threshold =
      student_t_quantile(1 - in.decision_alpha / static_cast<double>(candidates.size()),
                         s_noise.dof) *
      s_noise.rel_sd * k;
  const double level_pct = change_pct(score_raw[best], s0);
  const double score_pct = change_pct(score_raw[best], score_raw[0]);
  const double e_pct = change_pct(energy[best], e0), t_pct = change_pct(time[best], t0);
  const std::string against = repeats.size() > 1
                                  ? fmt::format(", {:+.1f}% against {}", level_pct, level_text)
                                  : std::string();
  const bool binds_here = caps[best] < tb.onset_cap_W;
  d.cap_W = caps[best];
  d.keep_default = false;
  // A saving that rests on a default row slower than most binding rows is not called beyond the
  // noise: heat or an off row, the rows cannot tell which.
  d.beyond_noise = binds_here && !hot_by_rows && gain > threshold;
  d.energy_change_pct = e_pct;
  d.time_change_pct = t_pct;
  d.reason = fmt::format(
      "{} W has the best {}{} ({:+.1f}% against the default {} W{}: energy per step {:+.1f}%, "
      "time per step {:+.1f}%), {} the {:.1f}% a saving must exceed to beat the noise{} ({})",
      caps[best], obj, constraint_text(in.objective), score_pct, in.default_limit_W, against, e_pct,
      t_pct, d.beyond_noise ? "beyond" : "within", 100 * (1 - std::exp(-threshold)),
      binds_here ? "" : "; it lies above where caps bind, so it repeats the default", evidence);
  return d;
}

// Probes with intervals: the default's power windows say which caps can bind; the intervals
// decide.
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

void widen(Measurement& m, double rel) {
  m.energy_per_step_ci_J = {m.energy_per_step_ci_J.first * (1 - rel),
                            m.energy_per_step_ci_J.second * (1 + rel)};
  if (m.time_per_step_ci_s.second > m.time_per_step_ci_s.first)
    m.time_per_step_ci_s = {m.time_per_step_ci_s.first * (1 - rel),
                            m.time_per_step_ci_s.second * (1 + rel)};
}

Decision decide_intervals(const std::vector<ProbeResult>& probes_in, int d_idx,
                          const DecisionInputs& in) {
  std::vector<ProbeResult> probes = probes_in;
  const std::string obj = in.objective.text();
  // Accepted per-second windows (no step markers): every figure is per second.
  const std::string per = std::any_of(probes.begin(), probes.end(),
                                      [](const ProbeResult& p) { return p.measurement.per_second; })
                              ? "second"
                              : "step";
  Decision d;
  d.basis = "intervals";
  std::string drift_text;
  if (in.default_again) {
    const Measurement& first = probes[static_cast<size_t>(d_idx)].measurement;
    Drift drift{change_pct(in.default_again->energy_per_step_J, first.energy_per_step_J),
                change_pct(in.default_again->time_per_step_s, first.time_per_step_s), first,
                *in.default_again};
    d.drift = drift;
    const double rel = std::abs(drift.energy_pct) / 100;
    drift_text = fmt::format(
        "; the default measured first and last differs by {:+.1f}% in energy per {} ({:+.1f}% "
        "in time): its estimate spans both windows and every other interval is widened by "
        "{:.1f}%",
        drift.energy_pct, per, drift.time_pct, 50 * rel);
    if (rel > kMaxDriftRel)
      return keep(in.default_limit_W,
                  fmt::format("the default measured first and last differs by {:+.1f}% in energy "
                              "per {} (more than {:.0f}%): the card changed under the sweep "
                              "(heat, other work), so no comparison holds; keeping the default "
                              "limit {} W. Let it settle longer (--max-settle-s) and sweep again",
                              drift.energy_pct, per, 100 * kMaxDriftRel, in.default_limit_W),
                  std::move(d));
    for (size_t i = 0; i < probes.size(); ++i)
      if (static_cast<int>(i) != d_idx) widen(probes[i].measurement, rel / 2);
    probes[static_cast<size_t>(d_idx)].measurement = merge_defaults(first, *in.default_again);
  }
  const ProbeResult& dflt = probes[static_cast<size_t>(d_idx)];
  const Measurement& dm = dflt.measurement;
  std::vector<double> caps;
  for (const auto& p : probes) caps.push_back(p.cap_W);
  LiveBinding lb = live_binding(dm, caps, in.default_limit_W);
  const bool windows = !dm.window_power_W.empty();
  if (lb.available) d.live_binding = lb;
  const bool hot = heat_limited(dm);
  const Interval dt = dm.time_per_step_ci_s;

  int best = d_idx;
  double best_score = *probe_score(dflt, dflt, in);
  for (size_t i = 0; i < probes.size(); ++i) {
    if (static_cast<int>(i) == d_idx) continue;
    const ProbeResult& p = probes[i];
    auto s = probe_score(p, dflt, in);
    if (!s) continue;
    if (windows) {
      double share = 0;
      for (const auto& c : lb.caps)
        if (std::abs(c.cap_W - p.cap_W) < 0.05) share = c.share;
      if (share < kMinBindShare) {
        if (*s < best_score)
          d.not_credited.push_back(
              {p.cap_W, fmt::format("the default's power windows reach it only {:.0f}% of the "
                                    "time (< {:.0f}%): it barely binds, so a difference there is "
                                    "noise or drift",
                                    100 * share, 100 * kMinBindShare)});
        continue;
      }
    }
    const Interval pt = p.measurement.time_per_step_ci_s;
    if (!hot && pt.second > pt.first && dt.second > dt.first &&
        pt.second < dt.first * (1 - kPhysicsToleranceRel)) {
      d.not_credited.push_back(
          {p.cap_W, fmt::format("time per {} [{:.4g}, {:.4g}] s lies more than 1% below the "
                                "default's [{:.4g}, {:.4g}] s: a cap cannot speed work up, so "
                                "this is noise or drift",
                                per, pt.first, pt.second, dt.first, dt.second)});
      continue;
    }
    if (*s < best_score || (*s == best_score && p.cap_W > probes[best].cap_W)) {
      best = static_cast<int>(i);
      best_score = *s;
    }
  }
  std::string not_credited_text;
  for (const auto& nc : d.not_credited)
    not_credited_text += fmt::format("; {} W not credited: {}", nc.cap_W, nc.why);
  if (best == d_idx)
    return keep(
        in.default_limit_W,
        fmt::format("no cap measured beats the default limit {} W on {}{}{}", in.default_limit_W,
                    obj, constraint_text(in.objective), not_credited_text),
        std::move(d));
  const ProbeResult& b = probes[static_cast<size_t>(best)];
  const double e_pct = change_pct(b.measurement.energy_per_step_J, dm.energy_per_step_J);
  const double t_pct = change_pct(b.measurement.time_per_step_s, dm.time_per_step_s);
  const double score_pct = change_pct(best_score, *probe_score(dflt, dflt, in));
  auto b_int = score_interval(in.objective, b.measurement, dm.time_per_step_s, in.max_power_W);
  auto d_int = score_interval(in.objective, dm, dm.time_per_step_s, in.max_power_W);
  const bool beats = b_int && d_int && b_int->second < d_int->first;
  const std::string evidence = fmt::format(
      "{} score interval [{:.4g}, {:.4g}] {} the default's [{:.4g}, {:.4g}]{}", obj,
      b_int ? b_int->first : 0.0, b_int ? b_int->second : 0.0, beats ? "lies below" : "overlaps",
      d_int ? d_int->first : 0.0, d_int ? d_int->second : 0.0, not_credited_text);
  if (!beats)
    return keep(in.default_limit_W,
                fmt::format("best cap {} W changes {} by {:+.1f}% (energy {:+.1f}%, time "
                            "{:+.1f}%), within the uncertainty ({}); keeping the default limit "
                            "{} W",
                            b.cap_W, obj, score_pct, e_pct, t_pct, evidence, in.default_limit_W),
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
      t_pct, evidence);
  return d;
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
  if (in.objective.kind == ObjectiveKind::MaxSlowdown && probes.size() > 1) {
    DecisionInputs free = in;
    free.objective = Objective{ObjectiveKind::Energy};
    const Decision u = decide_one(probes, d_idx, free);
    d.unconstrained = Alternative{"energy",          u.cap_W,
                                  u.keep_default,    u.energy_change_pct,
                                  u.time_change_pct, "--objective energy"};
  }
  return d;
}

}  // namespace regime::plan
