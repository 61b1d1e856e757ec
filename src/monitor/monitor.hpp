#pragma once
// An in-process monitor for training scripts (docs/python.md): the run loop of `regime probe`
// sampling one GPU on a thread of the caller's process, read-only (no root), with named windows
// whose energy, time and steps are measured by analysis/measure like a probe's: the driver's
// 20 ms power buffer, the energy counter, and bootstrap intervals.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/measurement.hpp"
#include "common/error.hpp"
#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime::monitor {

struct MonitorOptions {
  // One GPU: nvml:N, nvml:GPU-UUID, ..., cuda:N (CUDA's numbering in this process), sim:MODEL
  // (monitor/monitor_devices.hpp).
  std::string device = "nvml:0";
  // The loop wakes this often; power itself comes from the driver's buffer (20 ms points)
  // drained every drain_period_s, so waking more often adds cost and no resolution.
  double sample_period_s = 0.5;
  double energy_period_s = 5.0;
  double drain_period_s = 1.0;
  // A window at least this long gets an energy-counter reading at the first tick after its end
  // (the scheduled ones come every energy_period_s), so its energy is the counter's, shaped by
  // the power buffer, rather than the buffer's alone, which may differ from the counter by 1%.
  // Shorter windows gain little from a counter that updates every 100 ms, and a read costs
  // about 4 ms of the sampling thread on an H200.
  double edge_read_min_s = 1.0;
};

// What one window measured. energy_J is of the whole window [t_start_s, t_end_s]; its interval
// is the block bootstrap of energy per second (blocks of about 1 s) scaled to the window's
// length. The per-step figures are over the steps wholly inside the window, as `regime probe`
// measures them (no warm-up dropped: the window is what the caller asked for).
struct WindowFigures {
  std::string name;
  double t_start_s = 0;  // Unix seconds
  double t_end_s = 0;
  double time_s = 0;
  int64_t steps = 0;
  double energy_J = 0;
  Interval energy_ci_J{0, 0};
  double avg_power_W = 0;
  std::string energy_source;  // "counter", "instant_power", ... (analysis/measurement.hpp)
  std::string energy_detail;
  std::optional<double> energy_per_step_J;
  std::optional<Interval> energy_per_step_ci_J;
  std::optional<double> time_per_step_s;  // median
  std::optional<Interval> time_per_step_ci_s;
  int samples = 0;
  int power_points = 0;  // driver-buffer points inside the window
};

// The figures of [t0_s, t1_s] of a recorded trace (pure). Error InvalidArgument when the trace
// has nothing to measure there.
WindowFigures window_figures(const Trace& trace, const std::string& name, double t0_s, double t1_s);

nlohmann::json to_json(const WindowFigures& w);

// The monitor: opens the GPU and starts sampling at construction, stops at destruction.
// Thread-safe: windows and steps may come from any thread of the process.
class Monitor {
 public:
  // Error (the device layer's kind) when the GPU cannot be opened; InvalidArgument for bad
  // options.
  explicit Monitor(MonitorOptions options);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  const GpuInfo& gpu() const { return info_; }

  // Starts a window now. Error InvalidArgument when one of that name is open.
  void begin_window(const std::string& name);
  // Ends it now and returns its id; the figures follow once the samples covering its end are
  // in (within about drain_period_s + sample_period_s). Error InvalidArgument when none of
  // that name is open.
  int64_t end_window(const std::string& name);
  // Drops an open window unmeasured. Error InvalidArgument when none of that name is open.
  void cancel_window(const std::string& name);
  // The figures of an ended window, waiting for them up to timeout_s; nullopt when they are not
  // ready by then. Handed over once. The window's own error when it could not be measured (or
  // sampling stopped); NotFound for an unknown id or one already handed over.
  std::optional<WindowFigures> figures(int64_t id, double timeout_s);
  // A completed step, Unix seconds (time.time()). Error InvalidArgument when t_end < t_start.
  void mark_step(double t_start_s, double t_end_s);
  // Unix seconds on the monitor's clock (the one windows are stamped with).
  double now_s() const;

 private:
  // A counter reading the monitor took itself, after the tick at tick_s.
  struct CounterRead {
    double tick_s = 0, read_s = 0;
    double energy_J = 0;
  };
  struct Pending {
    std::string name;
    double t0_s = 0, t1_s = 0;
    bool edge_read = false;  // asked for (long enough) and not yet taken
    std::optional<CounterRead> after;
  };
  struct Done {
    std::optional<WindowFigures> figures;
    std::string error;
    ErrorKind kind = ErrorKind::Internal;
  };
  class Loop;

  void serve(const Trace& trace, double now_s);       // on the sampling thread, after each tick
  void read_edges(const Trace& trace, double now_s);  // the counter after long windows' ends
  Done measure(const Trace& trace, const Pending& p) const;

  MonitorOptions options_;
  GpuInfo info_;
  std::unique_ptr<Loop> loop_;
  double started_s_ = 0;  // the loop's first sample
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::map<std::string, double> open_;  // name -> start
  std::map<int64_t, Pending> pending_;
  std::map<int64_t, Done> done_;
  std::vector<Step> new_steps_;
  int64_t next_id_ = 0;
  int64_t next_step_ = 0;
  bool stop_ = false;
  std::string loop_error_;  // why sampling stopped early
  std::thread thread_;
};

}  // namespace regime::monitor
