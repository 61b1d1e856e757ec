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
  in.since_s = since_s;
  in.limit_W = limit_W;
  double temp_sum = 0, power_sum = 0, util_sum = 0;
  int temps = 0, powers = 0, utils = 0;
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
    if (it->util_pct) {
      util_sum += *it->util_pct;
      ++utils;
    }
  }
  if (temps > 0) in.temp_C = temp_sum / temps;
  if (powers > 0) in.power_W = power_sum / powers;
  if (utils > 0) in.util_pct = util_sum / utils;
  return in;
}

int steps_ended(const std::vector<Step>& steps, double since_s, double now_s) {
  int n = 0;
  // Steps are time-ordered: walk back from the newest.
  for (auto it = steps.rbegin(); it != steps.rend() && it->t_end_s > since_s; ++it)
    if (it->t_end_s <= now_s) ++n;
  return n;
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
    : ControlLoop(loop, {ControlLane{0, &guard, &controller, bounds, current_limit_W}}, dry_run) {}

ControlLoop::ControlLoop(RunLoop& loop, std::vector<ControlLane> lanes, bool dry_run)
    : loop_(loop), dry_run_(dry_run) {
  if (lanes.empty()) throw Error(ErrorKind::InvalidArgument, "control needs at least one GPU");
  for (const ControlLane& l : lanes) {
    if (!l.guard || !l.controller || l.gpu >= loop.gpu_count())
      throw Error(
          ErrorKind::InvalidArgument,
          fmt::format("control lane for GPU {} of {} is incomplete", l.gpu, loop.gpu_count()));
    if (!(l.controller->period_s() > 0))
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("controller period must be > 0 s, got {}", l.controller->period_s()));
    if (!(l.bounds.min_W > 0 && l.bounds.min_W <= l.bounds.max_W))
      throw Error(
          ErrorKind::InvalidArgument,
          fmt::format("control bounds [{}, {}] W are not a range", l.bounds.min_W, l.bounds.max_W));
    LaneState s;
    s.lane = l;
    s.limit_W = s.in_force_W = l.start_limit_W;
    lanes_.push_back(std::move(s));
  }
}

RunEnd ControlLoop::run() { return run_until(std::numeric_limits<double>::infinity()); }

RunEnd ControlLoop::run_until(double end_s) {
  for (LaneState& s : lanes_) {
    s.last_s = loop_.now_s();
    s.next_s = s.last_s + s.lane.controller->period_s();
  }
  while (true) {
    double next_s = end_s;
    for (const LaneState& s : lanes_) next_s = std::min(next_s, s.next_s);
    RunEnd end = loop_.run_until([&](const Trace&, double now) { return now >= next_s; });
    if (end != RunEnd::StopRequested) return end;
    const double now = loop_.now_s();
    for (LaneState& s : lanes_)
      if (now >= s.next_s) decide(s, now);
    if (now >= end_s) return RunEnd::StopRequested;
  }
}

void ControlLoop::decide(LaneState& s, double now) {
  const Trace& trace = loop_.trace(s.lane.gpu);
  const double t0 = loop_.t_start_s();  // the trace may start later: long runs forget
  ControlInput in = summarize(trace.samples, s.last_s, now, s.limit_W);
  in.steps = steps_ended(trace.steps, s.last_s, now);
  s.last_s = now;
  const double period = s.lane.controller->period_s();
  while (s.next_s <= now) s.next_s += period;
  Action a = s.lane.controller->decide(in);
  const double old = s.limit_W;
  std::optional<double> w;
  if (a.limit_W) w = constrain(*a.limit_W, s.limit_W, now, s.last_change_s, s.lane.bounds);
  if (w) {
    set(s, *w);
    s.actions.push_back({now - t0, in.temp_C, in.power_W, old, s.limit_W, a.why, !dry_run_});
    s.last_change_s = now;
  }
  if (dry_run_)
    s.decisions.push_back({now - t0, in.temp_C, in.power_W, old, s.limit_W, a.why, false});
}

void ControlLoop::set(LaneState& s, double watts) {
  if (dry_run_) {
    s.limit_W = watts;
    return;
  }
  if (std::abs(watts - s.in_force_W) >= 0.5) s.in_force_W = s.lane.guard->set(watts);
  s.limit_W = s.in_force_W;
}

void ControlLoop::step_aside() {
  if (dry_run_) return;
  for (LaneState& s : lanes_) {
    const double baseline_W = s.lane.controller->baseline_limit_W().value_or(s.lane.start_limit_W);
    if (std::abs(baseline_W - s.in_force_W) >= 0.5) s.in_force_W = s.lane.guard->set(baseline_W);
  }
}

void ControlLoop::resume() {
  const double now = loop_.now_s();
  for (LaneState& s : lanes_) {
    if (!dry_run_ && std::abs(s.limit_W - s.in_force_W) >= 0.5)
      s.in_force_W = s.lane.guard->set(s.limit_W);
    s.last_change_s = now;
    s.lane.controller->resumed(now);
  }
}

}  // namespace regime::control
