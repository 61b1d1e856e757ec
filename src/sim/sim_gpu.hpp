#pragma once
// sim:MODEL[,ambient_C=..,cooling=..,seed=..,noise=..]: a simulated GPU on a simulated clock,
// backed by the twin's physics (src/twin/model.hpp). The model advances in fixed ticks of at most
// kTick_s when the run loop sleeps on clock(); sensors behave like NVML's (power
// refreshed every 100 ms, a 1 s averaged power, 20 ms driver power buffer, energy counter,
// clocks-event reasons). A built-in workload (sim:NAME, sim_workload.hpp) loads it.
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "device/gpu.hpp"
#include "device/uri.hpp"
#include "twin/model.hpp"
#include "twin/spec.hpp"

namespace regime::sim {

inline constexpr double kTick_s = 0.01;
inline constexpr double kPowerPointPeriod_s = 0.02;    // nvmlDeviceGetSamples spacing
inline constexpr double kSensorPeriod_s = 0.1;         // NVML power readings refresh
inline constexpr double kAveragedPowerWindow_s = 1.0;  // the driver's averaged power
inline constexpr size_t kPowerPointCapacity = 120;     // about 2.4 s of buffer

struct SimOptions {
  double ambient_C = 25;
  double cooling = 1;  // thermal resistance scale (1 nominal, 2 = cooling half as good)
  uint64_t seed = 1;
  double noise = 0.01;  // relative sensor noise and step-time jitter (standard deviation)
};

// Parses the URI parameters; Error InvalidArgument for an unknown key or a value out of range.
SimOptions parse_sim_options(const DeviceUri& uri, const twin::GpuSpec& spec);

class SimGpu;

class SimClock : public Clock {
 public:
  explicit SimClock(SimGpu& gpu) : gpu_(gpu) {}
  double now_s() override;
  void sleep_until_s(double t_s) override;
  bool is_simulated() const override { return true; }

 private:
  SimGpu& gpu_;
};

class SimGpu : public Gpu {
 public:
  SimGpu(twin::GpuSpec spec, SimOptions options, std::string uri, int index = 0);

  GpuInfo info() override;
  Sample read() override;
  // Each read, like NVML's after a GPU falls off the bus, throws Error GpuLost once the simulated
  // GPU has shut down (its die reached shutdown_temp_C).
  std::optional<double> read_energy_J() override;
  std::vector<PowerPoint> drain_power_points() override;
  std::optional<ReasonTimes> read_reason_times() override;
  double set_power_limit(double watts) override;
  bool is_physical() const override { return false; }
  // The simulated clock a run on this GPU must use: sleeping on it advances the model.
  Clock& clock() { return clock_; }

  // Simulation time and stepping.
  double now_s() const { return t_s_; }
  void advance_to(double t_s);

  // The work that loads the GPU (one at a time). max_steps 0: never finishes by itself.
  void start_workload(const twin::WorkloadParams& work, int64_t max_steps);
  // Work that changes over time: each phase runs for its duration, from the start on, and the
  // cycle repeats. When every phase names its steps, each lasts that many steps instead (a fixed
  // amount of work, however long a cap makes it take). One phase is start_workload.
  struct PhaseWork {
    twin::WorkloadParams work;
    double duration_s = 0;
    int64_t steps = 0;
  };
  void start_phased_workload(std::vector<PhaseWork> phases, int64_t max_steps);
  void stop_workload();
  bool workload_active() const { return active_; }
  std::vector<Step> take_steps();
  int64_t steps_done() const { return steps_done_; }
  int64_t max_steps() const { return max_steps_; }

  const twin::GpuSpec& spec() const { return spec_; }
  const SimOptions& options() const { return options_; }
  // The true state, free of sensor noise (tests, benchmarks).
  double true_power_W() const { return power_W_; }
  double true_sm_MHz() const { return sm_MHz_; }
  double true_temp_C() const { return temp_C_; }
  double power_limit_W() const { return limit_W_; }
  bool shut_down() const { return shutdown_; }

 private:
  void tick(double dt_s);
  void follow_phases();      // work_ is the phase the clock is in
  void on_event(int64_t k);  // every kPowerPointPeriod_s
  double noisy(double value);
  uint64_t current_reasons() const;
  void throw_if_shut_down() const;

  twin::GpuSpec spec_;
  SimOptions options_;
  std::string uri_;
  int index_;
  SimClock clock_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};

  // Physical state.
  double t_s_ = 0;
  double limit_W_;
  double temp_C_;
  double sm_MHz_;
  double power_W_;
  double util_ = 0;
  double cap_clock_MHz_;      // the power governor's clock (integral control)
  double thermal_clock_MHz_;  // software thermal ceiling
  bool hw_thermal_ = false;
  bool shutdown_ = false;
  double shutdown_at_s_ = 0;
  double filtered_busy_W_;  // the governor's view of power
  double averaged_W_;       // the driver's 1 s averaged power
  double energy_J_ = 0;
  std::array<double, 9> reason_seconds_{};  // by bit index, 0x1 .. 0x100

  // Sensors (refreshed every kSensorPeriod_s) and the driver's buffer.
  double sensor_power_W_;
  double sensor_avg_W_;
  double sensor_util_pct_ = 0;
  std::deque<PowerPoint> points_;
  int64_t next_event_ = 1;  // index of the next kPowerPointPeriod_s boundary

  // Workload.
  bool active_ = false;
  twin::WorkloadParams work_;
  int64_t max_steps_ = 0;
  int64_t steps_done_ = 0;
  double progress_ = 0;   // steps of work done since the last step ended
  double step_work_ = 1;  // work the current step needs (jittered around 1)
  double step_start_s_ = 0;
  std::vector<Step> pending_steps_;
  std::vector<PhaseWork> phases_;  // two or more: work_ follows them (else work_ stays)
  double phases_start_s_ = 0;
  double cycle_s_ = 0;
  int64_t cycle_steps_ = 0;  // > 0: the phases last steps, not seconds

  // Tick constants for the common dt = kTick_s.
  double thermal_alpha_tick_, filter_alpha_tick_, average_alpha_tick_;
};

}  // namespace regime::sim
