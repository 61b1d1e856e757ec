#pragma once
// A small in-memory Gpu, clock and workload for tests and benchmarks of the run loop (no NVML, no
// twin): power follows a fixed pattern, the energy counter integrates it exactly.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/clock.hpp"
#include "device/gpu.hpp"
#include "run/workload.hpp"

namespace regime::testing {

// Simulated time that moves only when slept on; counts the sleeps.
class FakeClock final : public Clock {
 public:
  double now_s() override { return now_s_; }
  void sleep_until_s(double t_s) override {
    ++sleeps;
    if (t_s > now_s_) now_s_ = t_s;
  }
  bool is_simulated() const override { return true; }
  void advance_s(double dt_s) { now_s_ += dt_s; }
  long sleeps = 0;

 private:
  double now_s_ = 0;
};

// Constant power `power_W`; energy counter = power x time on `clock`; counts every call.
class TestGpu final : public Gpu {
 public:
  TestGpu(Clock& clock, double power_W) : clock_(clock), power_W_(power_W) {}

  GpuInfo info() override {
    GpuInfo i;
    i.device = "test:0";
    i.name = "Test GPU";
    i.uuid = "GPU-test";
    i.min_limit_W = 100;
    i.max_limit_W = 700;
    i.default_limit_W = 700;
    i.current_limit_W = limit_W;
    i.enforced_limit_W = limit_W;
    return i;
  }
  Sample read() override {
    ++reads;
    if (on_read) on_read();
    Sample s;
    s.power_W = power_W_;
    s.power_avg_W = power_W_;
    s.temp_C = 50;
    s.sm_MHz = 1980;
    s.mem_MHz = 3201;
    s.util_pct = 100;
    s.limit_W = limit_W;
    s.reasons = 0;
    return s;
  }
  std::optional<double> read_energy_J() override {
    ++energy_reads;
    return 1000.0 + power_W_ * clock_.now_s();
  }
  std::vector<PowerPoint> drain_power_points() override {
    ++drains;
    std::vector<PowerPoint> out;
    out.swap(buffered_points);
    out.push_back(PowerPoint{clock_.now_s(), power_W_});
    return out;
  }
  double set_power_limit(double watts) override {
    limit_W = watts;
    limit_changes.push_back(watts);
    return watts;
  }
  bool is_physical() const override { return false; }

  double limit_W = 700;
  long reads = 0, energy_reads = 0, drains = 0;
  std::vector<double> limit_changes;
  std::function<void()> on_read;            // e.g. to simulate a slow read
  std::vector<PowerPoint> buffered_points;  // returned by the next drain, before its own point

 private:
  Clock& clock_;
  double power_W_;
};

// Completes one step every `step_s` on `clock`; finishes after `total_steps` (0: never).
class TestWorkload final : public Workload {
 public:
  TestWorkload(Clock& clock, double step_s, int64_t total_steps)
      : clock_(clock), step_s_(step_s), total_steps_(total_steps) {}
  std::string name() const override { return "test"; }
  void start(double t0_s) override {
    t0_s_ = t0_s;
    started = true;
  }
  std::vector<Step> poll_steps() override {
    std::vector<Step> out;
    double now = clock_.now_s();
    while ((total_steps_ == 0 || next_ < total_steps_) &&
           t0_s_ + static_cast<double>(next_ + 1) * step_s_ <= now) {
      out.push_back(Step{next_, t0_s_ + static_cast<double>(next_) * step_s_,
                         t0_s_ + static_cast<double>(next_ + 1) * step_s_});
      ++next_;
    }
    return out;
  }
  bool finished() override { return total_steps_ > 0 && next_ >= total_steps_; }
  void stop() override { stopped = true; }
  std::optional<int> exit_status() override {
    return finished() || stopped ? std::optional<int>(0) : std::nullopt;
  }
  bool started = false, stopped = false;

 private:
  Clock& clock_;
  double step_s_;
  int64_t total_steps_;
  int64_t next_ = 0;
  double t0_s_ = 0;
};

}  // namespace regime::testing
