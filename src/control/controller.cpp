#include "control/controller.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.hpp"

namespace regime::control {

ControlInput summarize(const std::vector<Sample>& samples, double since_s, double now_s,
                       double limit_W) {
  ControlInput in;
  in.now_s = now_s;
  in.limit_W = limit_W;
  double temp_sum = 0, power_sum = 0;
  int temps = 0, powers = 0;
  // Samples are time-ordered: walk back from the newest.
  for (auto it = samples.rbegin(); it != samples.rend() && it->t_s > since_s; ++it) {
    if (it->t_s > now_s) continue;
    ++in.samples;
    if (it->temp_C) {
      temp_sum += *it->temp_C;
      ++temps;
      in.max_temp_C = std::max(in.max_temp_C.value_or(*it->temp_C), *it->temp_C);
    }
    if (it->power_W) {
      power_sum += *it->power_W;
      ++powers;
    }
  }
  if (temps > 0) in.temp_C = temp_sum / temps;
  if (powers > 0) in.power_W = power_sum / powers;
  return in;
}

std::optional<double> constrain(double wanted_W, double current_W, double now_s,
                                std::optional<double> last_change_s, const LimitBounds& b) {
  if (!std::isfinite(wanted_W)) return std::nullopt;
  if (last_change_s && now_s - *last_change_s < b.min_interval_s) return std::nullopt;
  double w = std::clamp(wanted_W, b.min_W, b.max_W);
  if (b.max_step_W > 0) w = std::clamp(w, current_W - b.max_step_W, current_W + b.max_step_W);
  // A current limit outside the bounds (set by someone else) is brought back inside.
  w = std::clamp(w, b.min_W, b.max_W);
  if (std::abs(w - current_W) < 0.5) return std::nullopt;  // NVML limits are whole milliwatts
  return w;
}

ControlLoop::ControlLoop(RunLoop& loop, PowerLimitGuard& guard, Controller& controller,
                         LimitBounds bounds, double current_limit_W, bool dry_run)
    : loop_(loop),
      guard_(guard),
      controller_(controller),
      bounds_(bounds),
      limit_W_(current_limit_W),
      in_force_W_(current_limit_W),
      dry_run_(dry_run) {
  if (!(controller.period_s() > 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("controller period must be > 0 s, got {}", controller.period_s()));
  if (!(bounds.min_W > 0 && bounds.min_W <= bounds.max_W))
    throw Error(ErrorKind::InvalidArgument, fmt::format("control bounds [{}, {}] W are not a range",
                                                        bounds.min_W, bounds.max_W));
}

RunEnd ControlLoop::run() { return run_until(std::numeric_limits<double>::infinity()); }

RunEnd ControlLoop::run_until(double end_s) {
  const double period = controller_.period_s();
  const double t0 = loop_.trace().samples.empty() ? loop_.now_s() : loop_.trace().samples[0].t_s;
  double last_s = loop_.now_s();
  double next_s = last_s + period;
  while (true) {
    const double stop_s = std::min(next_s, end_s);
    RunEnd end = loop_.run_until([&](const Trace&, double now) { return now >= stop_s; });
    if (end != RunEnd::StopRequested) return end;
    double now = loop_.now_s();
    if (now < next_s) return end;  // end_s reached between two decisions
    ControlInput in = summarize(loop_.trace().samples, last_s, now, limit_W_);
    last_s = now;
    while (next_s <= now) next_s += period;
    Action a = controller_.decide(in);
    const double old = limit_W_;
    std::optional<double> w;
    if (a.limit_W) w = constrain(*a.limit_W, limit_W_, now, last_change_s_, bounds_);
    if (w) {
      set(*w);
      actions_.push_back({now - t0, in.temp_C, in.power_W, old, limit_W_, a.why, !dry_run_});
      last_change_s_ = now;
    }
    if (dry_run_)
      decisions_.push_back({now - t0, in.temp_C, in.power_W, old, limit_W_, a.why, false});
    if (now >= end_s) return RunEnd::StopRequested;
  }
}

void ControlLoop::set(double watts) {
  if (dry_run_) {
    limit_W_ = watts;
    return;
  }
  if (std::abs(watts - in_force_W_) >= 0.5) in_force_W_ = guard_.set(watts);
  limit_W_ = in_force_W_;
}

void ControlLoop::step_aside(double limit_W) {
  if (dry_run_ || std::abs(limit_W - in_force_W_) < 0.5) return;
  in_force_W_ = guard_.set(limit_W);
}

void ControlLoop::resume() {
  const double now = loop_.now_s();
  if (!dry_run_ && std::abs(limit_W_ - in_force_W_) >= 0.5) in_force_W_ = guard_.set(limit_W_);
  last_change_s_ = now;
  controller_.resumed(now);
}

}  // namespace regime::control
