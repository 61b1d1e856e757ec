#include "present/render.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "plan/objective.hpp"

namespace regime::plan {

namespace {
// Four significant digits without an exponent: a table reader compares 76250 with 65100 at a
// glance, not 7.625e+04 with 6.51e+04.
std::string four_digits(double v) {
  if (!std::isfinite(v)) return "n/a";  // a figure that could not be measured
  const double a = std::abs(v);
  const int decimals = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : 4;
  return fmt::format("{:.{}f}", v, decimals);
}
// "+0.0", never "-0.0": a change that rounds to nothing has no sign.
std::string pct_cell(double pct) {
  if (!std::isfinite(pct)) return "n/a";
  const std::string out = fmt::format("{:+.1f}", pct);
  return out == "-0.0" ? "+0.0" : out;
}
}  // namespace

nlohmann::json result_json(const ProbeResult& p) {
  const Measurement& m = p.measurement;
  nlohmann::json j{{"cap_W", p.cap_W},
                   {"time_per_step_s", m.time_per_step_s},
                   {"energy_per_step_J", m.energy_per_step_J},
                   {"avg_power_W", m.avg_power_W},
                   {"steps", m.steps}};
  if (m.time_per_step_ci_s.second > m.time_per_step_ci_s.first)
    j["time_per_step_ci_s"] = {m.time_per_step_ci_s.first, m.time_per_step_ci_s.second};
  if (has_intervals(m))
    j["energy_per_step_ci_J"] = {m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second};
  if (!p.note.empty()) j["note"] = p.note;
  return j;
}

std::string results_table(const std::vector<ProbeResult>& probes, const DecisionView& v,
                          const std::optional<ProbeResult>& default_again) {
  auto sorted = by_cap_desc(probes);
  auto with_ci = [](double value, const Interval& ci) {
    if (!(ci.second > ci.first)) return four_digits(value);
    return fmt::format("{} [{}, {}]", four_digits(value), four_digits(ci.first),
                       four_digits(ci.second));
  };
  std::string out = fmt::format(
      "{:>8} {:>28} {:>32} {:>9} {:>8} {:>8} {:>6}\n", "cap W", fmt::format("time/{} s", v.unit),
      fmt::format("energy/{} J", v.unit), "power W", "dE %", "dT %", "steps");
  auto row = [&](const ProbeResult& p, const std::string& cap) {
    const Measurement& m = p.measurement;
    std::string de, dt;
    if (auto c = change_vs_default(v, p)) {
      de = pct_cell(c->energy_pct);
      dt = pct_cell(c->time_pct);
    }
    out += fmt::format("{:>8} {:>28} {:>32} {:>9.1f} {:>8} {:>8} {:>6}\n", cap,
                       with_ci(m.time_per_step_s, m.time_per_step_ci_s),
                       with_ci(m.energy_per_step_J, m.energy_per_step_ci_J), m.avg_power_W, de, dt,
                       m.steps);
  };
  for (const auto& p : sorted) row(p, fmt::format("{:.1f}", p.cap_W));
  if (default_again) row(*default_again, fmt::format("{:.1f}*", default_again->cap_W));
  if (default_again)
    out += fmt::format("   * the default {:g} W measured again at the end\n", default_again->cap_W);
  if (!v.reference_text.empty()) out += fmt::format("   dE, dT: against {}\n", v.reference_text);
  // A window that did not settle is worth a line of its own.
  for (const auto& p : sorted)
    if (p.note.rfind("not settled", 0) == 0)
      out += fmt::format("   note: {:g} W {}\n", p.cap_W, p.note);
  return out;
}

std::string decision_text(const Decision& d, const std::string& unit) {
  return decision_text(d, decision_view(d, {}, Objective{ObjectiveKind::Energy}, d.cap_W, unit));
}

std::string decision_text(const Decision& d, const DecisionView& v) {
  const std::string& unit = v.unit;
  std::string out =
      v.keep_default
          ? fmt::format("decision: keep the default limit {} W\n  reason: {}\n", v.cap_W, d.reason)
          : fmt::format(
                "decision: {} W (energy per {} {:+.1f}%, time per {} {:+.1f}%)\n  reason: {}\n",
                v.cap_W, unit, v.energy_change_pct, unit, v.time_change_pct, d.reason);
  if (v.energy_change_ci_pct || v.time_change_ci_pct)
    out += fmt::format("  change: {}\n", interval_line(v));
  if (!v.time_bound_text.empty()) out += fmt::format("  time bound: {}\n", v.time_bound_text);
  if (!v.certainty_text.empty()) out += fmt::format("  certainty: {}\n", v.certainty_text);
  if (d.noise) out += fmt::format("  noise:  {} per measurement\n", d.noise->describe());
  if (d.drift)
    out += fmt::format(
        "  drift:  the default measured first and last: energy per {} {:+.1f}%, time per {} "
        "{:+.1f}%\n",
        unit, d.drift->energy_pct, unit, d.drift->time_pct);
  if (d.unconstrained) {
    const Alternative& a = *d.unconstrained;
    if (a.cap_W == d.cap_W)
      out += fmt::format("  unconstrained optimum: the same ({}: {})\n", a.objective,
                         a.keep_default ? "keep the default" : fmt::format("{} W", a.cap_W));
    else if (a.keep_default)
      out += fmt::format("  unconstrained optimum: keep the default {} W (choose it with {})\n",
                         a.cap_W, a.how);
    else
      out += fmt::format(
          "  unconstrained optimum: {} W (energy per {} {:+.1f}%, time per {} {:+.1f}%); "
          "choose it with {}\n",
          a.cap_W, unit, a.energy_change_pct, unit, a.time_change_pct, a.how);
  }
  return out;
}

}  // namespace regime::plan
