#include "analysis/whole_run.hpp"

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
                                  const std::optional<Measurement>& at_start) {
  WholeRunFigures f;
  const auto [start_s, end_s] = run_span(traces);
  f.run = part_of(traces, start_s, end_s, true);
  const double probe_end_s = std::clamp(times.probe_end_s, start_s, end_s);
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
  const bool figure_ok = at_start && !at_start->per_second &&
                         std::isfinite(at_start->energy_per_step_J) &&
                         std::isfinite(at_start->energy_per_step_ci_J.first) &&
                         std::isfinite(at_start->energy_per_step_ci_J.second);
  if (figure_ok && f.run.steps > 0) {
    const double n = f.run.steps;
    f.saved_J = at_start->energy_per_step_J * n - f.run.energy_J;
    f.saved_ci_J = {at_start->energy_per_step_ci_J.first * n - f.run.energy_J,
                    at_start->energy_per_step_ci_J.second * n - f.run.energy_J};
  }
  return f;
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
  return j;
}

}  // namespace regime
