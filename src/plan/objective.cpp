#include "plan/objective.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "common/error.hpp"

namespace regime::plan {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

std::optional<double> energy_score(const Objective&, double energy_J, double, double, double) {
  return energy_J;
}

std::optional<double> edp_score(const Objective&, double energy_J, double time_s, double, double) {
  return energy_J * time_s;
}

std::optional<double> zeus_score(const Objective& o, double energy_J, double time_s, double,
                                 double max_power_W) {
  return o.eta * energy_J + (1 - o.eta) * max_power_W * time_s;
}

std::optional<double> max_slowdown_score(const Objective& o, double energy_J, double time_s,
                                         double default_time_s, double) {
  // A tiny tolerance so that the default itself (slowdown 0) is always feasible.
  if (time_s > default_time_s * (1 + o.max_slowdown_pct / 100) * (1 + 1e-12)) return std::nullopt;
  return energy_J;
}

// The objectives by name, in the order the list of forms names them: adding one is a value of
// `ObjectiveKind` and one row here.
const std::vector<ObjectiveEntry>& table() {
  static const std::vector<ObjectiveEntry> kObjectives = {
      {.kind = ObjectiveKind::Energy,
       .name = "energy",
       .summary = "least J per step",
       .score = energy_score,
       .score_is_energy = true,
       .curve_stop_spread_share = 0.25},
      {.kind = ObjectiveKind::Edp,
       .name = "edp",
       .summary = "least energy x delay (J s per step^2)",
       .score = edp_score,
       .curve_stop_spread_share = 0.75},
      {.kind = ObjectiveKind::Zeus,
       .name = "zeus",
       .param = ObjectiveParam{"ETA", &Objective::eta, 0, 1, "0 <= ETA <= 1"},
       .summary = "least ETA*E + (1-ETA)*P_max*T (Zeus, NSDI 2023); P_max = the highest limit",
       .score = zeus_score,
       .curve_stop_spread_share = 0.5},
      {.kind = ObjectiveKind::MaxSlowdown,
       .name = "max-slowdown",
       .param = ObjectiveParam{"PCT", &Objective::max_slowdown_pct, 0, kUnbounded,
                               "PCT >= 0, percent", true},
       .summary = "least energy with time per step at most (1+PCT/100) x default",
       .score = max_slowdown_score,
       .slowdown_bound = true,
       .unconstrained = ObjectiveKind::Energy,
       .score_is_energy = true},
  };
  return kObjectives;
}

// "expected energy, edp, zeus:ETA (0 <= ETA <= 1) or max-slowdown:PCT (PCT >= 0, percent)"
std::string forms() {
  const auto& rows = table();
  std::string out = "expected ";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += i + 1 == rows.size() ? " or " : ", ";
    out += rows[i].name;
    if (const auto& p = rows[i].param) out += fmt::format(":{} ({})", p->name, p->range_text);
  }
  return out;
}

const ObjectiveEntry* find_entry(std::string_view name) {
  for (const auto& e : table())
    if (e.name == name) return &e;
  return nullptr;
}

double parse_number(const std::string& text, const std::string& number) {
  double v = 0;
  auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || p != number.data() + number.size() ||
      !std::isfinite(v))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("objective '{}': '{}' is not a number ({})", text, number, forms()));
  return v;
}

// The number after "NAME:", checked against the parameter's range.
double parse_param(const std::string& text, std::string number, const ObjectiveParam& p) {
  if (p.percent_sign && !number.empty() && number.back() == '%') number.pop_back();
  const double v = parse_number(text, number);
  if (v < p.min || v > p.max)
    throw Error(ErrorKind::InvalidArgument,
                std::isinf(p.max)
                    ? fmt::format("objective '{}': {} {} must be >= {}", text, p.name, v, p.min)
                    : fmt::format("objective '{}': {} {} is outside [{}, {}]", text, p.name, v,
                                  p.min, p.max));
  return v;
}

}  // namespace

const std::vector<ObjectiveEntry>& objective_kinds() { return table(); }

const ObjectiveEntry& objective_entry(ObjectiveKind kind) {
  for (const auto& e : table())
    if (e.kind == kind) return e;
  throw Error(ErrorKind::Internal, "an objective without a row in the objective table");
}

std::string Objective::text() const {
  const ObjectiveEntry& e = objective_entry(kind);
  if (!e.param) return std::string(e.name);
  return fmt::format("{}:{}", e.name, this->*(e.param->field));
}

Objective parse_objective(const std::string& text) {
  if (text.empty()) return parse_objective(kDefaultObjective);
  const auto colon = text.find(':');
  const std::string head = text.substr(0, colon);
  const ObjectiveEntry* e = find_entry(head);
  if (e && e->param && colon == std::string::npos)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("objective '{}' needs a number after '{}:' ({})", text, head, forms()));
  if (!e || (e->param.has_value() != (colon != std::string::npos)))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("unknown objective '{}' ({})", text, forms()));
  Objective o;
  o.kind = e->kind;
  if (e->param) o.*(e->param->field) = parse_param(text, text.substr(colon + 1), *e->param);
  return o;
}

std::optional<double> score(const Objective& o, double energy_J, double time_s,
                            double default_time_s, double max_power_W) {
  return objective_entry(o.kind).score(o, energy_J, time_s, default_time_s, max_power_W);
}

Objective unconstrained(const Objective& o) {
  Objective free = o;
  free.kind = objective_entry(o.kind).unconstrained;
  return free;
}

std::optional<double> slowdown_bound_pct(const Objective& o) {
  const ObjectiveEntry& e = objective_entry(o.kind);
  if (!e.slowdown_bound || !e.param) return std::nullopt;
  return o.*(e.param->field);
}

bool scores_energy(const Objective& o) { return objective_entry(o.kind).score_is_energy; }

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
  const Objective free = unconstrained(o);
  auto lo = score(free, m.energy_per_step_ci_J.first, t.first, default_time_s, max_power_W);
  auto hi = score(free, m.energy_per_step_ci_J.second, t.second, default_time_s, max_power_W);
  return Interval{*lo, *hi};
}

}  // namespace regime::plan
