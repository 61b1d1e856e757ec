#include "control/phase.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime::control {

namespace {

// Two energies per step within this of each other are the same (2 s of host-bound steps measure
// to about 1%): the higher cap is kept.
constexpr double kTieRel = 0.02;
// A kind with less of the periods than this is a boundary or a blip, not a phase.
constexpr double kMinKindShare = 0.10;

double log_rate(const PeriodFeature& f) { return std::log2(std::max(1.0, *f.steps_per_s)); }

PeriodFeature centre(const std::vector<PeriodFeature>& fs) {
  PeriodFeature c;
  double log_sum = 0;
  int rates = 0;
  for (const PeriodFeature& f : fs) {
    c.util_pct += f.util_pct / static_cast<double>(fs.size());
    if (f.steps_per_s) {
      log_sum += log_rate(f);
      ++rates;
    }
  }
  if (rates > 0) c.steps_per_s = std::exp2(log_sum / rates);
  return c;
}

// The cap among the allowed cells with least energy per step, the highest within kTieRel of it.
std::optional<size_t> least_energy(const std::vector<std::optional<MixFigures>>& figs,
                                   double max_time_s) {
  std::optional<size_t> best;
  for (size_t i = 0; i < figs.size(); ++i)
    if (figs[i] && figs[i]->time_per_step_s <= max_time_s &&
        (!best || figs[i]->energy_per_step_J < figs[*best]->energy_per_step_J))
      best = i;
  if (!best) return best;
  for (size_t i = 0; i < figs.size(); ++i)
    if (figs[i] && figs[i]->time_per_step_s <= max_time_s &&
        figs[i]->energy_per_step_J <= figs[*best]->energy_per_step_J * (1 + kTieRel))
      return i;  // highest first
  return best;
}

std::string feature_text(const PeriodFeature& f) {
  return f.steps_per_s ? fmt::format("{:.0f}% busy, {:.0f} steps/s", f.util_pct, *f.steps_per_s)
                       : fmt::format("{:.0f}% busy", f.util_pct);
}

}  // namespace

PhaseParams phase_params(const PolicySpec& spec, const GpuInfo& info) {
  require_known_params(spec, {"observe_s", "learn_s", "caps", "slowdown_pct", "min_gain_pct"});
  PhaseParams p;
  p.min_W = info.min_limit_W;
  p.max_W = info.default_limit_W;
  p.observe_s = number_param(spec, "observe_s").value_or(p.observe_s);
  p.learn_s = number_param(spec, "learn_s").value_or(p.learn_s);
  p.caps = static_cast<int>(number_param(spec, "caps").value_or(p.caps));
  p.slowdown_pct = number_param(spec, "slowdown_pct").value_or(p.slowdown_pct);
  p.min_gain_pct = number_param(spec, "min_gain_pct").value_or(p.min_gain_pct);
  auto need = [&](bool ok, const std::string& what) {
    if (!ok)
      throw Error(ErrorKind::InvalidArgument, fmt::format("--policy {}: {}", spec.name, what));
  };
  need(p.observe_s >= 10, fmt::format("observe_s must be 10 s or more, got {}", p.observe_s));
  need(p.learn_s > p.observe_s && p.learn_s <= 3600,
       fmt::format("learn_s must be in (observe_s, 3600] s, got {}", p.learn_s));
  need(p.caps >= 2 && p.caps <= 20, fmt::format("caps must be in [2, 20], got {}", p.caps));
  need(p.slowdown_pct > 0 && p.slowdown_pct <= 100,
       fmt::format("slowdown_pct must be in (0, 100], got {}", p.slowdown_pct));
  need(p.min_gain_pct >= 0 && p.min_gain_pct < 100,
       fmt::format("min_gain_pct must be in [0, 100), got {}", p.min_gain_pct));
  need(p.min_W > 0 && p.min_W < p.max_W,
       fmt::format("the card's limits [{}, {}] W leave no range", p.min_W, p.max_W));
  return p;
}

double feature_distance(const PeriodFeature& a, const PeriodFeature& b) {
  const double du = (a.util_pct - b.util_pct) / 10.0;
  const double dr = a.steps_per_s && b.steps_per_s ? log_rate(a) - log_rate(b) : 0.0;
  return std::hypot(du, dr);
}

std::vector<PeriodFeature> find_kinds(const std::vector<PeriodFeature>& periods,
                                      double min_distance) {
  if (periods.size() < 2) return periods.empty() ? periods : std::vector{periods.front()};
  size_t a = 0, b = 0;
  double far = -1;
  for (size_t i = 0; i < periods.size(); ++i)
    for (size_t j = i + 1; j < periods.size(); ++j)
      if (const double d = feature_distance(periods[i], periods[j]); d > far) {
        far = d;
        a = i;
        b = j;
      }
  std::vector<PeriodFeature> c = {periods[a], periods[b]};
  std::vector<std::vector<PeriodFeature>> groups(2);
  for (int iter = 0; iter < 20; ++iter) {
    groups.assign(2, {});
    for (const PeriodFeature& f : periods) groups[nearest_kind(c, f)].push_back(f);
    if (groups[0].empty() || groups[1].empty()) break;
    c = {centre(groups[0]), centre(groups[1])};
  }
  const double small = static_cast<double>(std::min(groups[0].size(), groups[1].size()));
  if (feature_distance(c[0], c[1]) < min_distance ||
      small < kMinKindShare * static_cast<double>(periods.size()))
    return {centre(periods)};
  auto first = [](const PeriodFeature& x, const PeriodFeature& y) {
    if (std::abs(x.util_pct - y.util_pct) >= 1) return x.util_pct > y.util_pct;
    return x.steps_per_s.value_or(0) > y.steps_per_s.value_or(0);
  };
  if (first(c[1], c[0])) std::swap(c[0], c[1]);
  return c;
}

int nearest_kind(const std::vector<PeriodFeature>& kinds, const PeriodFeature& f) {
  int best = 0;
  for (size_t k = 1; k < kinds.size(); ++k)
    if (feature_distance(kinds[k], f) < feature_distance(kinds[best], f))
      best = static_cast<int>(k);
  return best;
}

std::optional<MixFigures> mix_figures(const std::vector<std::vector<CapCell>>& table,
                                      const std::vector<double>& shares,
                                      const std::vector<size_t>& caps) {
  double energy = 0, time = 0, share = 0;
  for (size_t k = 0; k < table.size(); ++k) {
    const CapCell& c = table[k].at(caps[k]);
    if (!c.measured()) return std::nullopt;
    energy += shares[k] * c.energy_per_step_J();
    time += shares[k] * c.time_per_step_s();
    share += shares[k];
  }
  if (!(share > 0)) return std::nullopt;
  return MixFigures{energy / share, time / share};
}

PhasePlan plan_phase_caps(const std::vector<std::vector<CapCell>>& table,
                          const std::vector<double>& shares, const PhaseParams& p) {
  PhasePlan plan;
  const double bound = 1 + p.slowdown_pct / 100;
  std::vector<size_t> chosen;
  for (size_t k = 0; k < table.size(); ++k) {
    std::vector<std::optional<MixFigures>> own;
    for (const CapCell& c : table[k])
      own.push_back(c.measured()
                        ? std::optional(MixFigures{c.energy_per_step_J(), c.time_per_step_s()})
                        : std::nullopt);
    const auto ref = std::find_if(own.begin(), own.end(), [](const auto& f) { return f; });
    const auto best =
        ref == own.end() ? std::nullopt : least_energy(own, (*ref)->time_per_step_s * bound);
    if (!best) {
      plan.why = fmt::format("phase {} was not measured at any cap while learning", k + 1);
      return plan;
    }
    chosen.push_back(*best);
    plan.cap_W.push_back(table[k][*best].cap_W);
  }
  std::vector<std::optional<MixFigures>> single;
  for (size_t i = 0; i < table.front().size(); ++i)
    single.push_back(mix_figures(table, shares, std::vector<size_t>(table.size(), i)));
  const auto ref = std::find_if(single.begin(), single.end(), [](const auto& f) { return f; });
  const auto mix = mix_figures(table, shares, chosen);
  if (ref == single.end() || !mix) {
    plan.why = "no cap was measured in every phase while learning: no single cap to compare with";
    return plan;
  }
  const size_t one = least_energy(single, (*ref)->time_per_step_s * bound)
                         .value_or(static_cast<size_t>(ref - single.begin()));
  plan.single_W = table.front()[one].cap_W;
  plan.single_energy_per_step_J = single[one]->energy_per_step_J;
  plan.phase_energy_per_step_J = mix->energy_per_step_J;
  plan.gain_pct = 100 * (1 - plan.phase_energy_per_step_J / plan.single_energy_per_step_J);
  std::string caps;
  for (size_t k = 0; k < plan.cap_W.size(); ++k)
    caps += fmt::format("{}phase {} {:.0f} W", k ? ", " : "", k + 1, plan.cap_W[k]);
  const bool differ = std::any_of(plan.cap_W.begin(), plan.cap_W.end(),
                                  [&](double w) { return std::abs(w - plan.cap_W[0]) >= 0.5; });
  plan.engage = differ && plan.gain_pct >= p.min_gain_pct;
  plan.why = fmt::format(
      "each phase's best cap (least energy per step within +{:.0f}% time): {}; best single cap "
      "{:.0f} W; predicted {:.3g} J/step with the phases' caps against {:.3g} J/step at one cap "
      "({:+.1f}%): {}",
      p.slowdown_pct, caps, *plan.single_W, plan.phase_energy_per_step_J,
      plan.single_energy_per_step_J, -plan.gain_pct,
      plan.engage ? "the phases want different caps; setting each phase's own"
                  : fmt::format("one cap serves every phase (the phases' caps save under {:g}%)",
                                p.min_gain_pct));
  return plan;
}

bool kinds_recur(const std::vector<PeriodFeature>& periods,
                 const std::vector<PeriodFeature>& kinds) {
  std::vector<int> runs(kinds.size(), 0);
  int current = -1;
  size_t length = 0;
  const auto close = [&] {
    if (current >= 0 && length >= kMinRecurringRunPeriods) ++runs[static_cast<size_t>(current)];
  };
  for (const PeriodFeature& f : periods) {
    const int kind = nearest_kind(kinds, f);
    if (kind != current) {
      close();
      current = kind;
      length = 0;
    }
    ++length;
  }
  close();
  return std::all_of(runs.begin(), runs.end(), [](int n) { return n >= 2; });
}

PhaseController::PhaseController(PhaseParams p) : p_(p) {}

Action PhaseController::decide(const ControlInput& in) {
  if (!t0_s_) {
    t0_s_ = in.since_s;
    start_limit_W_ = in.limit_W;
  }
  if (!in.util_pct || in.samples == 0) return {std::nullopt, "no utilisation in the last period"};
  const double dt = in.now_s - in.since_s;
  PeriodFeature f{*in.util_pct, dt > 0 ? std::optional(in.steps / dt) : std::nullopt};
  switch (stage_) {
    case Stage::Observe:
      return observe(in, f);
    case Stage::Sweep:
      return sweep(in, nearest_kind(kinds_, f));
    case Stage::Control:
      break;
  }
  return control(in, kinds_.empty() ? 0 : nearest_kind(kinds_, f));
}

Action PhaseController::observe(const ControlInput& in, const PeriodFeature& f) {
  // Loading a model is no phase: the watch starts at the job's first step (the plan needs steps).
  if (seen_.empty() && in.steps == 0) return {std::nullopt, "waiting for the job's first step"};
  if (!observe_from_s_) observe_from_s_ = in.since_s;
  seen_.push_back(f);
  seen_steps_.push_back(in.steps);
  if (in.now_s - *observe_from_s_ < p_.observe_s - 1e-9)
    return {std::nullopt, fmt::format("observing the phases: {}", feature_text(f))};
  // The last observe_s only, so that a warm-up slides out of the window.
  const auto window = static_cast<size_t>(std::lround(p_.observe_s / p_.period_s));
  if (seen_.size() > window) {
    seen_.erase(seen_.begin(), seen_.end() - static_cast<long>(window));
    seen_steps_.erase(seen_steps_.begin(), seen_steps_.end() - static_cast<long>(window));
  }
  kinds_ = find_kinds(seen_, p_.min_distance);
  const bool phased = kinds_.size() >= 2 && kinds_recur(seen_, kinds_);
  const bool watch_on = in.now_s - *t0_s_ < kWatchShareOfLearning * p_.learn_s - 1e-9;
  if (!phased && watch_on)
    return {std::nullopt,
            fmt::format("observing the phases: {} (watching on: {})", feature_text(f),
                        kinds_.size() < 2 ? "one so far" : "a change that has not come back")};
  if (!phased) {
    PhasePlan plan;
    plan.why = kinds_.size() < 2
                   ? fmt::format(
                         "one phase in the last {:.0f} s of {:.0f} s watched ({}): one cap serves "
                         "the job",
                         p_.observe_s, in.now_s - *observe_from_s_, feature_text(kinds_.front()))
                   : fmt::format(
                         "the job changed once in the last {:.0f} s of {:.0f} s watched ({} and "
                         "{}) and did not change back: a trend, not phases; one cap serves the job",
                         p_.observe_s, in.now_s - *observe_from_s_, feature_text(kinds_[0]),
                         feature_text(kinds_[1]));
    plan_ = plan;
    stage_ = Stage::Control;
    return {std::nullopt, plan.why};
  }
  std::vector<CapCell> grid;
  for (int i = 0; i < p_.caps; ++i)
    grid.push_back({std::round(p_.max_W - i * (p_.max_W - p_.min_W) / (p_.caps - 1))});
  table_.assign(kinds_.size(), grid);
  next_cap_.assign(kinds_.size(), 0);
  step_share_.assign(kinds_.size(), 0);
  double steps = 0;
  for (int n : seen_steps_) steps += n;
  for (size_t i = 0; i < seen_.size(); ++i)
    step_share_[nearest_kind(kinds_, seen_[i])] += steps > 0 ? seen_steps_[i] / steps : 0;
  stage_ = Stage::Sweep;
  return {std::nullopt, fmt::format("{} phases found; sweeping caps within each", kinds_.size())};
}

Action PhaseController::set_for(double cap_W, const ControlInput& in, const std::string& why) {
  if (std::abs(in.limit_W - cap_W) < 0.5) return {std::nullopt, why + ": holding"};
  return {cap_W, fmt::format("{}: {:.0f} W", why, cap_W)};
}

Action PhaseController::sweep(const ControlInput& in, int k) {
  const double dt = in.now_s - in.since_s;
  const bool done = std::all_of(next_cap_.begin(), next_cap_.end(),
                                [&](size_t i) { return i >= table_.front().size(); });
  if (done || in.now_s - *t0_s_ >= p_.learn_s) {
    finish_sweep();
    return control(in, k);
  }
  const size_t i = std::min(next_cap_[k], table_[k].size() - 1);
  const std::string why = fmt::format("sweeping phase {}", k + 1);
  if (k != kind_) {
    kind_ = k;
    changed_s_ = in.now_s;
    return set_for(table_[k][i].cap_W, in, why);
  }
  const bool settled = in.since_s >= changed_s_ + p_.settle_s - 1e-9;
  if (next_cap_[k] < table_[k].size() && settled && in.power_W &&
      std::abs(in.limit_W - table_[k][i].cap_W) < 0.5) {
    CapCell& c = table_[k][i];
    c.energy_J += *in.power_W * dt;
    c.seconds += dt;
    c.steps += in.steps;
    if (c.seconds >= p_.measure_s - 1e-9 && ++next_cap_[k] < table_[k].size()) {
      changed_s_ = in.now_s;
      return set_for(table_[k][next_cap_[k]].cap_W, in, why);
    }
  }
  return set_for(table_[k][std::min(next_cap_[k], table_[k].size() - 1)].cap_W, in, why);
}

void PhaseController::finish_sweep() {
  plan_ = plan_phase_caps(table_, step_share_, p_);
  stage_ = Stage::Control;
}

Action PhaseController::control(const ControlInput& in, int k) {
  if (!plan_ || !plan_->engage) {
    // The sweep may have left its lowest cap set: the limit control started from comes back at
    // once, not when the learning time is up (until then the job would run at that cap).
    const std::string why = "standing aside: " + learned();
    if (start_limit_W_ && std::abs(in.limit_W - *start_limit_W_) >= 0.5)
      return {*start_limit_W_, fmt::format("{} (back to {:.0f} W)", why, *start_limit_W_)};
    return {std::nullopt, why};
  }
  return set_for(plan_->cap_W.at(k), in,
                 fmt::format("phase {} ({})", k + 1, feature_text(kinds_.at(k))));
}

std::optional<std::string> PhaseController::stands_aside() const {
  if (!plan_) return "it did not finish learning the phases' caps";
  if (!plan_->engage) return plan_->why;
  return std::nullopt;
}

std::optional<double> PhaseController::baseline_limit_W() const {
  return plan_ ? plan_->single_W : std::nullopt;
}

}  // namespace regime::control
