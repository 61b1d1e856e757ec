#include "plan/objective.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>

#include "common/error.hpp"

namespace regime::plan {

namespace {

constexpr const char* kForms =
    "expected energy, edp, zeus:ETA (0 <= ETA <= 1) or "
    "max-slowdown:PCT (PCT >= 0, percent)";

double parse_number(const std::string& text, const std::string& number) {
  double v = 0;
  auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || p != number.data() + number.size() ||
      !std::isfinite(v))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("objective '{}': '{}' is not a number ({})", text, number, kForms));
  return v;
}

}  // namespace

std::string Objective::text() const {
  switch (kind) {
    case ObjectiveKind::Energy:
      return "energy";
    case ObjectiveKind::Edp:
      return "edp";
    case ObjectiveKind::Zeus:
      return fmt::format("zeus:{}", eta);
    case ObjectiveKind::MaxSlowdown:
      return fmt::format("max-slowdown:{}", max_slowdown_pct);
  }
  return "?";
}

Objective parse_objective(const std::string& text) {
  if (text.empty()) return parse_objective(kDefaultObjective);
  Objective o;
  if (text == "energy") {
    o.kind = ObjectiveKind::Energy;
    return o;
  }
  if (text == "edp") {
    o.kind = ObjectiveKind::Edp;
    return o;
  }
  auto colon = text.find(':');
  std::string head = text.substr(0, colon);
  if (colon != std::string::npos && head == "zeus") {
    o.kind = ObjectiveKind::Zeus;
    o.eta = parse_number(text, text.substr(colon + 1));
    if (o.eta < 0 || o.eta > 1)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("objective '{}': ETA {} is outside [0, 1]", text, o.eta));
    return o;
  }
  if (colon != std::string::npos && head == "max-slowdown") {
    o.kind = ObjectiveKind::MaxSlowdown;
    std::string number = text.substr(colon + 1);
    if (!number.empty() && number.back() == '%') number.pop_back();
    o.max_slowdown_pct = parse_number(text, number);
    if (o.max_slowdown_pct < 0)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("objective '{}': PCT {} must be >= 0", text, o.max_slowdown_pct));
    return o;
  }
  if (head == "zeus" || head == "max-slowdown")
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("objective '{}' needs a number after '{}:' ({})", text, head, kForms));
  throw Error(ErrorKind::InvalidArgument, fmt::format("unknown objective '{}' ({})", text, kForms));
}

std::optional<double> score(const Objective& o, double energy_J, double time_s,
                            double default_time_s, double max_power_W) {
  switch (o.kind) {
    case ObjectiveKind::Energy:
      return energy_J;
    case ObjectiveKind::Edp:
      return energy_J * time_s;
    case ObjectiveKind::Zeus:
      return o.eta * energy_J + (1 - o.eta) * max_power_W * time_s;
    case ObjectiveKind::MaxSlowdown:
      // A tiny tolerance so that the default itself (slowdown 0) is always feasible.
      if (time_s > default_time_s * (1 + o.max_slowdown_pct / 100) * (1 + 1e-12))
        return std::nullopt;
      return energy_J;
  }
  return std::nullopt;
}

bool has_intervals(const Measurement& m) {
  return m.energy_per_step_ci_J.second > m.energy_per_step_ci_J.first;
}

std::optional<Interval> score_interval(const Objective& o, const Measurement& m,
                                       double default_time_s, double max_power_W) {
  if (!has_intervals(m)) return std::nullopt;
  if (!score(o, m.energy_per_step_J, m.time_per_step_s, default_time_s, max_power_W))
    return std::nullopt;
  // The time interval may be absent (zero width): then the point value bounds both corners.
  auto t = m.time_per_step_ci_s;
  if (!(t.second > t.first)) t = {m.time_per_step_s, m.time_per_step_s};
  // max-slowdown's constraint is judged on the point value; its score is energy alone.
  Objective unconstrained = o;
  if (o.kind == ObjectiveKind::MaxSlowdown) unconstrained.kind = ObjectiveKind::Energy;
  auto lo =
      score(unconstrained, m.energy_per_step_ci_J.first, t.first, default_time_s, max_power_W);
  auto hi =
      score(unconstrained, m.energy_per_step_ci_J.second, t.second, default_time_s, max_power_W);
  return Interval{*lo, *hi};
}

}  // namespace regime::plan
