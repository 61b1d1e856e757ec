#include "sim/sim_gpu.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "device/uri.hpp"

namespace regime::sim {

namespace {

double alpha(double dt_s, double tau_s) { return tau_s > 0 ? 1.0 - std::exp(-dt_s / tau_s) : 1.0; }

constexpr double kEps_s = 1e-9;

}  // namespace

SimOptions parse_sim_options(const DeviceUri& uri, const twin::GpuSpec& spec) {
  for (const auto& [key, value] : uri.params)
    if (key != "ambient_C" && key != "cooling" && key != "seed" && key != "noise")
      throw Error(ErrorKind::InvalidArgument,
                  "device '" + uri.text + "': unknown parameter '" + key +
                      "' (sim devices take ambient_C, cooling, seed, noise)");
  SimOptions o;
  o.ambient_C = uri.param_or("ambient_C", spec.ambient_C);
  o.cooling = uri.param_or("cooling", 1.0);
  double seed = uri.param_or("seed", 1.0);
  o.noise = uri.param_or("noise", 0.01);
  auto range = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(ErrorKind::InvalidArgument, "device '" + uri.text + "': " + what);
  };
  range(o.ambient_C >= -40 && o.ambient_C < spec.slowdown_temp_C,
        fmt::format("ambient_C must lie in [-40, {}) C", spec.slowdown_temp_C));
  range(o.cooling > 0 && o.cooling <= 20, "cooling must lie in (0, 20] (1 = nominal)");
  range(seed >= 0 && seed == std::floor(seed), "seed must be a non-negative integer");
  range(o.noise >= 0 && o.noise <= 0.5, "noise must lie in [0, 0.5] (relative standard deviation)");
  o.seed = static_cast<uint64_t>(seed);
  return o;
}

double SimClock::now_s() { return gpu_.now_s(); }
void SimClock::sleep_until_s(double t_s) { gpu_.advance_to(t_s); }

SimGpu::SimGpu(twin::GpuSpec spec, SimOptions options, std::string uri, int index)
    : spec_(std::move(spec)),
      options_(options),
      uri_(std::move(uri)),
      index_(index),
      clock_(*this),
      rng_(options.seed),
      limit_W_(spec_.default_limit_W),
      temp_C_(options.ambient_C),
      sm_MHz_(spec_.idle_sm_MHz),
      power_W_(twin::idle_power_W(spec_, options.ambient_C)),
      cap_clock_MHz_(spec_.max_sm_MHz),
      thermal_clock_MHz_(spec_.max_sm_MHz),
      filtered_busy_W_(power_W_),
      averaged_W_(power_W_),
      sensor_power_W_(power_W_),
      sensor_avg_W_(power_W_) {
  thermal_alpha_tick_ = alpha(kTick_s, spec_.thermal_time_constant_s);
  filter_alpha_tick_ = alpha(kTick_s, spec_.governor_filter_s);
  average_alpha_tick_ = alpha(kTick_s, kAveragedPowerWindow_s);
}

GpuInfo SimGpu::info() {
  GpuInfo g;
  g.device = uri_;
  g.index = index_;
  g.name = spec_.name;
  g.uuid = fmt::format("GPU-sim-{}-{:016x}", spec_.model, options_.seed);
  g.driver_version = "sim";
  g.min_limit_W = spec_.min_limit_W;
  g.max_limit_W = spec_.max_limit_W;
  g.default_limit_W = spec_.default_limit_W;
  g.current_limit_W = limit_W_;
  g.enforced_limit_W = limit_W_;
  g.slowdown_temp_C = spec_.slowdown_temp_C;
  g.shutdown_temp_C = spec_.shutdown_temp_C;
  g.gpu_max_temp_C = spec_.gpu_max_temp_C;
  g.max_sm_MHz = spec_.max_sm_MHz;
  g.max_mem_MHz = spec_.max_mem_MHz;
  return g;
}

uint64_t SimGpu::current_reasons() const {
  if (!active_) return reason::kIdle;
  uint64_t r = 0;
  const double near_max = spec_.max_sm_MHz * (1.0 - 1e-3);
  if (cap_clock_MHz_ < near_max && cap_clock_MHz_ <= thermal_clock_MHz_) r |= reason::kSwPowerCap;
  if (thermal_clock_MHz_ < near_max && thermal_clock_MHz_ < cap_clock_MHz_) r |= reason::kSwThermal;
  if (hw_thermal_) r |= reason::kHwThermal;
  return r;
}

void SimGpu::throw_if_shut_down() const {
  if (!shutdown_) return;
  throw Error(ErrorKind::GpuLost,
              fmt::format("{}: the simulated GPU shut down at {:.2f} s, when the die reached its "
                          "shutdown temperature {} C (ambient {} C, cooling x{}): even at the "
                          "hardware slowdown clock the cooling cannot carry the heat away",
                          uri_, shutdown_at_s_, spec_.shutdown_temp_C, options_.ambient_C,
                          options_.cooling));
}

Sample SimGpu::read() {
  throw_if_shut_down();
  Sample s;
  s.t_s = t_s_;
  s.gpu = index_;
  s.power_W = sensor_power_W_;
  s.power_avg_W = sensor_avg_W_;
  s.temp_C = std::round(temp_C_);  // NVML reports whole degrees
  s.sm_MHz = std::round(sm_MHz_);
  s.mem_MHz = spec_.max_mem_MHz;
  s.util_pct = sensor_util_pct_;
  s.limit_W = limit_W_;
  s.reasons = current_reasons();
  return s;
}

std::vector<PowerPoint> SimGpu::drain_power_points() {
  throw_if_shut_down();
  std::vector<PowerPoint> out(points_.begin(), points_.end());
  points_.clear();
  return out;
}

std::optional<ReasonTimes> SimGpu::read_reason_times() {
  throw_if_shut_down();
  ReasonTimes times;
  for (size_t i = 0; i < reason_seconds_.size(); ++i)
    times.seconds_by_reason[uint64_t{1} << i] = reason_seconds_[i];
  return times;
}

std::optional<double> SimGpu::read_energy_J() {
  throw_if_shut_down();
  return energy_J_;
}

double SimGpu::set_power_limit(double watts) {
  throw_if_shut_down();
  check_cap_in_range(watts, spec_.min_limit_W, spec_.max_limit_W, uri_);
  limit_W_ = watts;  // the governor follows with its own lag
  return limit_W_;
}

void SimGpu::start_workload(const twin::WorkloadParams& work, int64_t max_steps) {
  throw_if_shut_down();
  work_ = work;
  max_steps_ = max_steps;
  steps_done_ = 0;
  progress_ = 0;
  step_work_ = 1;
  step_start_s_ = t_s_;
  pending_steps_.clear();
  phases_.clear();
  cycle_steps_ = 0;
  active_ = true;
}

void SimGpu::start_phased_workload(std::vector<PhaseWork> phases, int64_t max_steps) {
  if (phases.empty())
    throw Error(ErrorKind::InvalidArgument, "a phased simulated workload needs a phase");
  start_workload(phases.front().work, max_steps);
  if (phases.size() < 2) return;
  double cycle_s = 0;
  for (const PhaseWork& p : phases) {
    if (!(p.duration_s > 0))
      throw Error(ErrorKind::InvalidArgument, "a phase of a simulated workload lasts no time");
    cycle_s += p.duration_s;
  }
  int64_t cycle_steps = 0;
  bool by_steps = true;
  for (const PhaseWork& p : phases) {
    cycle_steps += p.steps;
    by_steps = by_steps && p.steps > 0;
  }
  if (!by_steps) cycle_steps = 0;
  phases_ = std::move(phases);
  phases_start_s_ = t_s_;
  cycle_s_ = cycle_s;
  cycle_steps_ = cycle_steps;
}

void SimGpu::follow_phases() {
  if (phases_.size() < 2) return;
  if (cycle_steps_ > 0) {
    int64_t at = steps_done_ % cycle_steps_;
    for (const PhaseWork& p : phases_) {
      if (at < p.steps) {
        work_ = p.work;
        return;
      }
      at -= p.steps;
    }
  }
  double at_s = std::fmod(t_s_ - phases_start_s_ + kEps_s, cycle_s_);
  for (const PhaseWork& p : phases_) {
    if (at_s < p.duration_s) {
      work_ = p.work;
      return;
    }
    at_s -= p.duration_s;
  }
  work_ = phases_.back().work;
}

void SimGpu::stop_workload() { active_ = false; }

std::vector<Step> SimGpu::take_steps() {
  std::vector<Step> out;
  out.swap(pending_steps_);
  return out;
}

double SimGpu::noisy(double value) {
  return options_.noise > 0 ? value * (1.0 + options_.noise * normal_(rng_)) : value;
}

void SimGpu::advance_to(double t_end_s) {
  while (t_s_ < t_end_s - kEps_s) {
    const double event_s = static_cast<double>(next_event_) * kPowerPointPeriod_s;
    const double dt = std::min({kTick_s, t_end_s - t_s_, event_s - t_s_});
    tick(dt);
    if (t_s_ >= event_s - kEps_s) {
      t_s_ = event_s;  // no drift: events sit on exact multiples
      on_event(next_event_);
      ++next_event_;
    }
  }
}

void SimGpu::on_event(int64_t k) {
  points_.push_back({t_s_, noisy(power_W_)});
  if (points_.size() > kPowerPointCapacity) points_.pop_front();
  constexpr int64_t kEventsPerSensor =
      static_cast<int64_t>(kSensorPeriod_s / kPowerPointPeriod_s + 0.5);
  if (k % kEventsPerSensor == 0) {
    sensor_power_W_ = noisy(power_W_);
    sensor_avg_W_ = noisy(averaged_W_);
    sensor_util_pct_ = std::round(100.0 * util_);
  }
}

void SimGpu::tick(double dt) {
  const bool full = std::abs(dt - kTick_s) < 1e-12;
  const double a_thermal = full ? thermal_alpha_tick_ : alpha(dt, spec_.thermal_time_constant_s);
  const double a_filter = full ? filter_alpha_tick_ : alpha(dt, spec_.governor_filter_s);
  const double a_average = full ? average_alpha_tick_ : alpha(dt, kAveragedPowerWindow_s);

  if (shutdown_) {
    // Powered off: no work, no power; the die cools towards ambient.
    sm_MHz_ = 0;
    power_W_ = 0;
    util_ = 0;
  } else if (active_) {
    follow_phases();
    thermal_clock_MHz_ = twin::thermal_ceiling_MHz(spec_, temp_C_);
    hw_thermal_ = twin::hw_slowdown_at(spec_, temp_C_);
    double f = std::min(cap_clock_MHz_, thermal_clock_MHz_);
    if (hw_thermal_) f = spec_.min_sm_MHz;
    sm_MHz_ = std::clamp(f, spec_.min_sm_MHz, spec_.max_sm_MHz);
    const twin::Operating op = twin::operating_point(spec_, work_, sm_MHz_, temp_C_);
    power_W_ = op.avg_W;
    util_ = op.util;
    // Firmware power governor: integral control of the clock on filtered busy power.
    filtered_busy_W_ += (op.busy_W - filtered_busy_W_) * a_filter;
    cap_clock_MHz_ += spec_.governor_gain_per_s * dt * spec_.max_sm_MHz *
                      (limit_W_ - filtered_busy_W_) / limit_W_;
    cap_clock_MHz_ = std::clamp(cap_clock_MHz_, spec_.min_sm_MHz, spec_.max_sm_MHz);
    // Work done: steps end when the accumulated work crosses the (jittered) step size.
    const double rate = 1.0 / op.time_s;  // steps per second
    double t_in_tick = 0;
    progress_ += rate * dt;
    while (progress_ >= step_work_ && (max_steps_ == 0 || steps_done_ < max_steps_)) {
      progress_ -= step_work_;
      t_in_tick = dt - progress_ / rate;
      const double end_s = t_s_ + std::clamp(t_in_tick, 0.0, dt);
      pending_steps_.push_back({steps_done_, step_start_s_, end_s});
      step_start_s_ = end_s;
      ++steps_done_;
      step_work_ = options_.noise > 0 ? std::max(0.5, 1.0 + options_.noise * normal_(rng_)) : 1.0;
    }
    if (max_steps_ > 0 && steps_done_ >= max_steps_) active_ = false;
  } else {
    sm_MHz_ = spec_.idle_sm_MHz;
    power_W_ = twin::idle_power_W(spec_, temp_C_);
    util_ = 0;
    hw_thermal_ = false;
    cap_clock_MHz_ = spec_.max_sm_MHz;  // boosts at the next start; the governor pulls it back
    thermal_clock_MHz_ = spec_.max_sm_MHz;
    filtered_busy_W_ = power_W_;
  }
  const double target_C =
      options_.ambient_C + spec_.thermal_resistance_C_per_W * options_.cooling * power_W_;
  temp_C_ += (target_C - temp_C_) * a_thermal;
  if (!shutdown_ && temp_C_ >= spec_.shutdown_temp_C) {
    // The thermal protection powers the GPU off on reaching the threshold: never hotter.
    temp_C_ = spec_.shutdown_temp_C;
    shutdown_ = true;
    shutdown_at_s_ = t_s_ + dt;
    active_ = false;
    hw_thermal_ = false;
  }
  averaged_W_ += (power_W_ - averaged_W_) * a_average;
  energy_J_ += power_W_ * dt;
  const uint64_t reasons = current_reasons();
  for (size_t i = 0; i < reason_seconds_.size(); ++i)
    if (reasons & (uint64_t{1} << i)) reason_seconds_[i] += dt;
  t_s_ += dt;
}

}  // namespace regime::sim
