#include "plan/decision.hpp"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <optional>

#include "common/error.hpp"

namespace regime::plan {

namespace {
double change_pct(double value, double reference) { return (value / reference - 1) * 100; }
}  // namespace

nlohmann::json to_json(const Decision& d) {
  return {{"cap_W", d.cap_W},
          {"keep_default", d.keep_default},
          {"energy_change_pct", d.energy_change_pct},
          {"time_change_pct", d.time_change_pct},
          {"reason", d.reason}};
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
  int d_idx = find_probe(probes, in.default_limit_W);
  if (d_idx < 0)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("no measurement at the default limit {} W: a decision compares every "
                            "cap against it",
                            in.default_limit_W));
  const ProbeResult& dflt = probes[d_idx];
  const Measurement& dm = dflt.measurement;
  const std::string obj = in.objective.text();

  // The best cap by the objective; ties go to the higher cap (less intervention).
  // Single measurements at caps the workload cannot reach are not credited (see the header).
  const double no_bind_W = dm.avg_power_W * (1 + kNoBindMargin);
  std::optional<double> ignored_best_W;
  double ignored_best_score = 0;
  int best = d_idx;
  double best_score = *probe_score(dflt, dflt, in);
  for (size_t i = 0; i < probes.size(); ++i) {
    auto s = probe_score(probes[i], dflt, in);
    if (!s) continue;
    if (static_cast<int>(i) != d_idx && !has_intervals(probes[i].measurement) &&
        probes[i].cap_W >= no_bind_W) {
      if (!ignored_best_W || *s < ignored_best_score) {
        ignored_best_W = probes[i].cap_W;
        ignored_best_score = *s;
      }
      continue;
    }
    if (*s < best_score || (*s == best_score && probes[i].cap_W > probes[best].cap_W)) {
      best = static_cast<int>(i);
      best_score = *s;
    }
  }
  const ProbeResult& b = probes[best];
  double e_pct = change_pct(b.measurement.energy_per_step_J, dm.energy_per_step_J);
  double t_pct = change_pct(b.measurement.time_per_step_s, dm.time_per_step_s);
  double default_score = *probe_score(dflt, dflt, in);
  double score_pct = change_pct(best_score, default_score);

  if (best == d_idx) {
    std::string why =
        fmt::format("no cap measured beats the default limit {} W on {}", in.default_limit_W, obj);
    if (in.objective.kind == ObjectiveKind::MaxSlowdown)
      why += fmt::format(" within a {}% slowdown", in.objective.max_slowdown_pct);
    if (ignored_best_W && ignored_best_score < *probe_score(dflt, dflt, in))
      why += fmt::format(
          "; {} W measured {:+.1f}% but lies above the draw at the default ({:.1f} W x {:.2f}): a "
          "cap there cannot bind, so the difference is noise",
          *ignored_best_W, change_pct(ignored_best_score, *probe_score(dflt, dflt, in)),
          dm.avg_power_W, 1 + kNoBindMargin);
    return keep_default_because(in.default_limit_W, why);
  }

  auto b_int = score_interval(in.objective, b.measurement, dm.time_per_step_s, in.max_power_W);
  auto d_int = score_interval(in.objective, dm, dm.time_per_step_s, in.max_power_W);
  std::string evidence;
  bool beats = false;
  if (b_int && d_int) {
    beats = b_int->second < d_int->first;
    evidence = fmt::format("{} score interval [{:.4g}, {:.4g}] {} the default's [{:.4g}, {:.4g}]",
                           obj, b_int->first, b_int->second, beats ? "lies below" : "overlaps",
                           d_int->first, d_int->second);
  } else {
    beats = best_score < default_score * (1 - in.noise_floor_rel);
    evidence = fmt::format(
        "single measurements without intervals: a change must exceed the {:.0f}% "
        "noise floor",
        in.noise_floor_rel * 100);
  }
  if (!beats)
    return keep_default_because(
        in.default_limit_W,
        fmt::format("best cap {} W changes {} by {:+.1f}% (energy {:+.1f}%, time {:+.1f}%), within "
                    "the uncertainty ({}); keeping the default limit {} W",
                    b.cap_W, obj, score_pct, e_pct, t_pct, evidence, in.default_limit_W));
  Decision d;
  d.cap_W = b.cap_W;
  d.keep_default = false;
  d.energy_change_pct = e_pct;
  d.time_change_pct = t_pct;
  d.reason = fmt::format(
      "{} W has the best {} ({:+.1f}% against the default {} W: energy per step "
      "{:+.1f}%, time per step {:+.1f}%); {}",
      b.cap_W, obj, score_pct, in.default_limit_W, e_pct, t_pct, evidence);
  return d;
}

}  // namespace regime::plan
