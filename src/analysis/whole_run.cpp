#include "analysis/whole_run.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/series.hpp"

namespace regime {

namespace {

// Energy of [a, b] on one GPU's trace from its best source; 0 where nothing covers it.
double energy_between_J(const Trace& t, double a, double b) {
  if (!(b > a)) return 0;
  std::vector<const Sample*> samples;
  samples.reserve(t.samples.size());
  for (const Sample& s : t.samples) samples.push_back(&s);
  const detail::EnergyFunction ef = detail::best_energy_function(samples, t.power_points, a, b);
  return ef.source == EnergySource::None ? 0 : ef.F.between(a, b);
}

// Steps ending in (a, b] (the first span takes a step ending at its start too).
int steps_ending_in(const Trace& t, double a, double b, bool first) {
  int n = 0;
  for (const Step& s : t.steps)
    if ((s.t_end_s > a || (first && s.t_end_s == a)) && s.t_end_s <= b) ++n;
  return n;
}

RunPart part_of(const std::vector<Trace>& traces, double a, double b, bool first) {
  RunPart p;
  p.from_s = a;
  p.to_s = b;
  p.seconds = std::max(0.0, b - a);
  // Every GPU of a job runs the same steps: the first trace counts them.
  if (!traces.empty()) p.steps = steps_ending_in(traces.front(), a, b, first);
  for (const Trace& t : traces) p.energy_J += energy_between_J(t, a, b);
  if (p.steps > 0) p.energy_per_step_J = p.energy_J / p.steps;
  return p;
}

std::pair<double, double> run_span(const std::vector<Trace>& traces) {
  double a = std::numeric_limits<double>::infinity();
  double b = -a;
  for (const Trace& t : traces) {
    if (t.samples.empty()) continue;
    a = std::min(a, t.samples.front().t_s);
    b = std::max(b, t.samples.back().t_s);
  }
  if (!(b >= a)) return {0, 0};
  return {a, b};
}

// A steady per-step figure with a finite interval.
bool usable(const std::optional<Measurement>& m) {
  return m && !m->per_second && std::isfinite(m->energy_per_step_J) &&
         std::isfinite(m->energy_per_step_ci_J.first) &&
         std::isfinite(m->energy_per_step_ci_J.second) && std::isfinite(m->time_per_step_s);
}

std::string limit_words(bool is_default, double limit_W) {
  return fmt::format("{} {:g} W", is_default ? "default" : "starting limit", limit_W);
}

}  // namespace

std::string to_string(StudyReach r) {
  switch (r) {
    case StudyReach::Probe:
      return "probe";
    case StudyReach::Sweep:
      return "sweep";
    case StudyReach::Decision:
      return "decision";
  }
  return "probe";
}

WholeRunFigures whole_run_figures(const std::vector<Trace>& traces, const StudyTimes& times,
                                  const SavingBasis& basis) {
  WholeRunFigures f;
  const auto [start_s, end_s] = run_span(traces);
  f.run = part_of(traces, start_s, end_s, true);
  const double probe_end_s = std::clamp(times.probe_end_s, start_s, end_s);
  // The run's energy is its spans' summed, each from the best source covering it: the parts add
  // up to the run, and a source that covers every span but not the whole run still counts.
  const double cut_s = std::clamp(times.sweep_end_s.value_or(probe_end_s), probe_end_s, end_s);
  f.run.energy_J = 0;
  for (const auto& [a, b] :
       {std::pair{start_s, probe_end_s}, std::pair{probe_end_s, cut_s}, std::pair{cut_s, end_s}})
    for (const Trace& t : traces) f.run.energy_J += energy_between_J(t, a, b);
  if (f.run.steps > 0) f.run.energy_per_step_J = f.run.energy_J / f.run.steps;
  f.probe = part_of(traces, start_s, probe_end_s, true);
  if (times.sweep_ran) {
    const double to_s = std::clamp(times.sweep_end_s.value_or(end_s), probe_end_s, end_s);
    f.profiling = part_of(traces, probe_end_s, to_s, false);
    f.reached = StudyReach::Sweep;
  }
  if (times.sweep_end_s) {
    const double from_s = std::clamp(*times.sweep_end_s, probe_end_s, end_s);
    f.decided = part_of(traces, from_s, end_s, false);
    f.cap_W = times.cap_W;
    f.reached = StudyReach::Decision;
  }
  const std::optional<Measurement>& ref = basis.reference;
  // No energy measured over the run (no source covered it): no saving is claimed.
  if (usable(ref) && f.run.steps > 0 && f.run.energy_J > 0) {
    f.saved_against = basis.against;
    const auto at_reference = [&basis](std::optional<double> limit_W) {
      return limit_W && basis.reference_W && *limit_W == *basis.reference_W;
    };
    // The parts that ran elsewhere than at the reference's limit, against the reference.
    double n = f.run.steps, energy_J = f.run.energy_J;
    // A probe away from the reference counts at its steady figure: its start-up (slower first
    // steps, autotuning) would have been paid at the reference's limit as well.
    double start_half_J = 0;
    if (at_reference(times.start_W)) {
      n -= f.probe.steps;
      energy_J -= f.probe.energy_J;
    } else if (usable(basis.start) && f.probe.steps > 0) {
      energy_J += basis.start->energy_per_step_J * f.probe.steps - f.probe.energy_J;
      start_half_J =
          (basis.start->energy_per_step_ci_J.second - basis.start->energy_per_step_ci_J.first) / 2 *
          f.probe.steps;
    }
    const bool decided_counts =
        f.decided && !at_reference(times.cap_W ? times.cap_W : times.start_W);
    if (f.decided && !decided_counts) {
      n -= f.decided->steps;
      energy_J -= f.decided->energy_J;
    }
    f.ran_at_reference = n == 0 && !f.profiling;
    f.saved_J = f.ran_at_reference ? 0.0 : ref->energy_per_step_J * n - energy_J;
    // The reference's interval over the steps it stands for, the decision's over the steps run
    // under it.
    double lo_J = (ref->energy_per_step_J - ref->energy_per_step_ci_J.first) * n;
    double hi_J = (ref->energy_per_step_ci_J.second - ref->energy_per_step_J) * n;
    lo_J = std::hypot(lo_J, start_half_J);
    hi_J = std::hypot(hi_J, start_half_J);
    if (decided_counts && usable(basis.decision) && f.decided->steps > 0) {
      const Measurement& d = *basis.decision;
      const double m = f.decided->steps;
      lo_J = std::hypot(lo_J, (d.energy_per_step_ci_J.second - d.energy_per_step_J) * m);
      hi_J = std::hypot(hi_J, (d.energy_per_step_J - d.energy_per_step_ci_J.first) * m);
    }
    f.saved_ci_J = {*f.saved_J - lo_J, *f.saved_J + hi_J};
    if (f.profiling) {
      f.profiling_extra_J = f.profiling->energy_J - ref->energy_per_step_J * f.profiling->steps;
      f.profiling_extra_s = f.profiling->seconds - ref->time_per_step_s * f.profiling->steps;
    }
  }
  return f;
}

WholeRunFigures whole_run_figures(const std::vector<Trace>& traces, const StudyTimes& times,
                                  const std::optional<Measurement>& at_start) {
  return whole_run_figures(
      traces, times,
      SavingBasis{at_start, "starting limit", std::nullopt, times.start_W, std::nullopt});
}

SavingBasis saving_basis(const std::optional<Measurement>& at_start, double start_W,
                         const std::optional<Measurement>& at_default, double default_W) {
  if (usable(at_start) && start_W == default_W)
    return {at_start, limit_words(true, default_W), std::nullopt, default_W, std::nullopt};
  if (usable(at_default))
    return {at_default, limit_words(true, default_W), std::nullopt, default_W,
            start_W == default_W ? std::nullopt : at_start};
  return {at_start, limit_words(false, start_W), std::nullopt, start_W, std::nullopt};
}

nlohmann::json to_json(const RunPart& p) {
  return {{"from_s", p.from_s},
          {"to_s", p.to_s},
          {"steps", p.steps},
          {"seconds", p.seconds},
          {"energy_J", p.energy_J},
          {"energy_per_step_J",
           p.energy_per_step_J ? nlohmann::json(*p.energy_per_step_J) : nlohmann::json()}};
}

nlohmann::json to_json(const WholeRunFigures& f) {
  nlohmann::json j = to_json(f.run);
  j["reached"] = to_string(f.reached);
  j["cap_W"] = f.cap_W ? nlohmann::json(*f.cap_W) : nlohmann::json();
  j["probe"] = to_json(f.probe);
  j["profiling"] = f.profiling ? to_json(*f.profiling) : nlohmann::json();
  j["decided"] = f.decided ? to_json(*f.decided) : nlohmann::json();
  j["saved_J"] = f.saved_J ? nlohmann::json(*f.saved_J) : nlohmann::json();
  j["saved_ci_J"] = f.saved_J ? nlohmann::json::array({f.saved_ci_J.first, f.saved_ci_J.second})
                              : nlohmann::json();
  j["saved_against"] = f.saved_J ? nlohmann::json(f.saved_against) : nlohmann::json();
  j["ran_at_reference"] = f.ran_at_reference;
  j["profiling_extra_J"] =
      f.profiling_extra_J ? nlohmann::json(*f.profiling_extra_J) : nlohmann::json();
  j["profiling_extra_s"] =
      f.profiling_extra_s ? nlohmann::json(*f.profiling_extra_s) : nlohmann::json();
  return j;
}

}  // namespace regime
