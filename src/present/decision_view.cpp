#include "present/decision_view.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "analysis/statistics.hpp"
#include "plan/study_plan.hpp"

namespace regime::plan {

namespace {

constexpr double kSameCapW = 0.05;  // caps match as find_probe matches them

struct Reference {
  Measurement m;
  std::string text;
};

bool repeats_default(const Decision& d, double cap_W) {
  if (!d.binding) return false;
  const auto& caps = d.binding->repeat_caps_W;
  return std::any_of(caps.begin(), caps.end(),
                     [cap_W](double c) { return std::abs(c - cap_W) < kSameCapW; });
}

// The default's level the decision compared against (see the header).
std::optional<Reference> reference_of(const Decision& d, const std::vector<ProbeResult>& probes,
                                      double default_limit_W, int chosen) {
  const int at = find_probe(probes, default_limit_W);
  if (at < 0) return std::nullopt;
  Reference r{probes[static_cast<size_t>(at)].measurement,
              fmt::format("{:g} W, the default limit", default_limit_W)};
  if (d.drift) {
    // Both windows as one estimate: their mean, the interval covering both.
    const Measurement &a = d.drift->first, &b = d.drift->second;
    r.m.energy_per_step_J = 0.5 * (a.energy_per_step_J + b.energy_per_step_J);
    r.m.time_per_step_s = 0.5 * (a.time_per_step_s + b.time_per_step_s);
    r.m.energy_per_step_ci_J = {
        std::min(a.energy_per_step_ci_J.first, b.energy_per_step_ci_J.first),
        std::max(a.energy_per_step_ci_J.second, b.energy_per_step_ci_J.second)};
    r.m.time_per_step_ci_s = {std::min(a.time_per_step_ci_s.first, b.time_per_step_ci_s.first),
                              std::max(a.time_per_step_ci_s.second, b.time_per_step_ci_s.second)};
    r.text += " measured first and last";
    return r;
  }
  if (d.basis != "single measurements") return r;
  if (chosen >= 0 && !d.keep_default) {
    // The decision's own changes define its level: no second rule to drift apart from it.
    const Measurement& c = probes[static_cast<size_t>(chosen)].measurement;
    r.m.energy_per_step_J = c.energy_per_step_J / (1 + d.energy_change_pct / 100);
    r.m.time_per_step_s = c.time_per_step_s / (1 + d.time_change_pct / 100);
  } else {
    // Kept: the geometric mean of the rows that repeat the default, as the decision's level.
    double log_e = 0, log_t = 0;
    int n = 0;
    for (const auto& p : probes)
      if (repeats_default(d, p.cap_W)) {
        log_e += std::log(p.measurement.energy_per_step_J);
        log_t += std::log(p.measurement.time_per_step_s);
        ++n;
      }
    if (n > 0) {
      r.m.energy_per_step_J = std::exp(log_e / n);
      r.m.time_per_step_s = std::exp(log_t / n);
    }
  }
  // Named as what it is: the default's own row, or a level of several rows.
  const Measurement& row = probes[static_cast<size_t>(at)].measurement;
  const bool own_row = std::abs(r.m.energy_per_step_J / row.energy_per_step_J - 1) < 1e-9 &&
                       std::abs(r.m.time_per_step_s / row.time_per_step_s - 1) < 1e-9;
  const size_t repeats = d.binding ? d.binding->repeat_caps_W.size() : 1;
  if (!own_row && repeats > 1)
    r.text =
        fmt::format("the default's level (mean of the {} rows at caps that cannot bind)", repeats);
  r.m.energy_per_step_ci_J = r.m.time_per_step_ci_s = {0, 0};
  return r;
}

// A change's 95% interval from the noise of single measurements: the row's and the level's.
std::optional<Interval> noise_interval(double pct, const std::optional<NoiseEstimate>& noise) {
  if (!noise || !(noise->rel_sd > 0) || !(noise->dof > 0)) return std::nullopt;
  const double k = std::sqrt(1 + 1 / static_cast<double>(std::max(1, noise->repeat_rows)));
  const double half = student_t_quantile(0.975, noise->dof) * noise->rel_sd * k;
  const double ratio = 1 + pct / 100;
  return Interval{100 * (ratio * std::exp(-half) - 1), 100 * (ratio * std::exp(half) - 1)};
}

}  // namespace

DecisionView decision_view(const Decision& d, const std::vector<ProbeResult>& probes,
                           const Objective& objective, double default_limit_W,
                           const std::string& unit) {
  DecisionView v;
  v.cap_W = d.cap_W;
  v.keep_default = d.keep_default;
  v.default_limit_W = default_limit_W;
  v.unit = unit;
  v.max_slowdown_pct = slowdown_bound_pct(objective);
  const int chosen = d.keep_default ? -1 : find_probe(probes, d.cap_W);
  auto ref = reference_of(d, probes, default_limit_W, chosen);
  // Changes are ratios against the reference: one of 0 or not finite (a sweep that could not be
  // decided) has no changes to show.
  if (ref && !(std::isfinite(ref->m.energy_per_step_J) && ref->m.energy_per_step_J > 0 &&
               std::isfinite(ref->m.time_per_step_s) && ref->m.time_per_step_s > 0))
    ref.reset();
  if (ref) {
    v.reference_energy_per_step_J = ref->m.energy_per_step_J;
    v.reference_time_per_step_s = ref->m.time_per_step_s;
    v.reference_text = ref->text;
  }
  if (d.keep_default) return v;
  v.saving_beyond_noise = d.beyond_noise;
  if (!d.beyond_noise)
    v.certainty_text =
        "within the noise: the best cap measured, taken because nothing measured says it costs "
        "energy or time past the objective, but its rows cannot tell this saving from scatter";
  v.energy_change_pct = d.energy_change_pct;
  v.time_change_pct = d.time_change_pct;
  if (chosen >= 0 && ref && d.basis == "intervals") {
    ProbeResult c = probes[static_cast<size_t>(chosen)];
    if (d.drift) {
      // The decision widened every other cap's interval by half the drift.
      const double rel = std::abs(d.drift->energy_pct) / 200;
      Measurement& m = c.measurement;
      m.energy_per_step_ci_J = {m.energy_per_step_ci_J.first * (1 - rel),
                                m.energy_per_step_ci_J.second * (1 + rel)};
      if (m.time_per_step_ci_s.second > m.time_per_step_ci_s.first)
        m.time_per_step_ci_s = {m.time_per_step_ci_s.first * (1 - rel),
                                m.time_per_step_ci_s.second * (1 + rel)};
    }
    const ProbeResult base{default_limit_W, ref->m, ""};
    v.energy_change_ci_pct = energy_change(c, base).ci_pct;
    v.time_change_ci_pct = time_change(c, base).ci_pct;
    v.interval_source = "95% CI";
  } else if (d.basis == "single measurements") {
    // The score's noise is energy's only when the score is energy.
    if (scores_energy(objective))
      v.energy_change_ci_pct = noise_interval(v.energy_change_pct, d.noise);
    v.time_change_ci_pct = noise_interval(v.time_change_pct, d.time_noise);
    if (v.energy_change_ci_pct || v.time_change_ci_pct)
      v.interval_source = "95% CI from the rows' noise";
  }
  if (v.max_slowdown_pct) {
    const double bound = *v.max_slowdown_pct;
    if (v.time_change_pct > bound)
      v.time_bound_text = fmt::format("time per {} {:+.1f}% exceeds the {:g}% slowdown bound", unit,
                                      v.time_change_pct, bound);
    else if (v.time_change_ci_pct && v.time_change_ci_pct->second > bound) {
      v.only_point_meets_time_bound = true;
      v.time_bound_text = fmt::format(
          "only the point estimate meets the {:g}% slowdown bound: time per {} {:+.1f}%, its 95% "
          "interval reaches {:+.1f}%",
          bound, unit, v.time_change_pct, v.time_change_ci_pct->second);
    }
  }
  return v;
}

std::optional<RowChange> change_vs_default(const DecisionView& v, const ProbeResult& p) {
  if (!v.reference_energy_per_step_J || !v.reference_time_per_step_s) return std::nullopt;
  if (!v.keep_default && std::abs(p.cap_W - v.cap_W) < kSameCapW)
    return RowChange{v.energy_change_pct, v.time_change_pct};
  const RowChange c{(p.measurement.energy_per_step_J / *v.reference_energy_per_step_J - 1) * 100,
                    (p.measurement.time_per_step_s / *v.reference_time_per_step_s - 1) * 100};
  if (!std::isfinite(c.energy_pct) || !std::isfinite(c.time_pct)) return std::nullopt;
  return c;
}

namespace {
nlohmann::json interval_json(const std::optional<Interval>& ci) {
  return ci ? nlohmann::json{ci->first, ci->second} : nlohmann::json(nullptr);
}
nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json to_json(const DecisionView& v) {
  return {{"cap_W", v.cap_W},
          {"keep_default", v.keep_default},
          {"energy_change_pct", v.energy_change_pct},
          {"energy_change_ci_pct", interval_json(v.energy_change_ci_pct)},
          {"time_change_pct", v.time_change_pct},
          {"time_change_ci_pct", interval_json(v.time_change_ci_pct)},
          {"interval_source", v.interval_source},
          {"reference",
           {{"text", v.reference_text},
            {"energy_per_step_J", optional_json(v.reference_energy_per_step_J)},
            {"time_per_step_s", optional_json(v.reference_time_per_step_s)}}},
          {"max_slowdown_pct", optional_json(v.max_slowdown_pct)},
          {"only_point_estimate_meets_time_bound", v.only_point_meets_time_bound},
          {"time_bound", v.time_bound_text},
          {"saving_beyond_noise", v.saving_beyond_noise},
          {"certainty", v.certainty_text}};
}

nlohmann::json decision_json(const Decision& d, const DecisionView& v) {
  nlohmann::json j = to_json(d);
  j.update(to_json(v));
  return j;
}

std::string pct_with_ci(double pct, const std::optional<Interval>& ci) {
  std::string out = fmt::format("{:+.1f}%", pct);
  if (ci) out += fmt::format(" [{:+.1f}, {:+.1f}]", ci->first, ci->second);
  return out;
}

std::string interval_line(const DecisionView& v) {
  if (v.keep_default) return "";
  std::string out = fmt::format("energy per {} {}, time per {} {}", v.unit,
                                pct_with_ci(v.energy_change_pct, v.energy_change_ci_pct), v.unit,
                                pct_with_ci(v.time_change_pct, v.time_change_ci_pct));
  if (!v.interval_source.empty()) out += " (" + v.interval_source + ")";
  if (!v.reference_text.empty()) out += " against " + v.reference_text;
  return out;
}

}  // namespace regime::plan
