#pragma once
// The one run loop: samples a GPU while a workload runs, on the device's clock (simulated for sim:
// devices, else the wall clock), and returns the Trace. It never changes a power limit by itself;
// a caller that must (a live sweep) schedules actions at window edges.
#include <functional>
#include <optional>
#include <vector>

#include "device/gpu.hpp"
#include "run/clock.hpp"
#include "run/workload.hpp"
#include "trace/trace.hpp"

namespace regime {

// Something to do at a fixed offset from the run's start, e.g. set the next cap of a sweep. It
// runs right after the sample taken at that instant (which carries an energy reading), so the
// energy counter brackets each window exactly.
struct ScheduledAction {
  double at_s = 0;  // seconds after the run's start, on the run clock
  std::function<void(Gpu& gpu, double now_s)> act;
};

struct RunOptions {
  double duration_s = 60;         // run length on the run clock; <= 0: until the workload ends
  double sample_period_s = 0.01;  // cheap fields (power, clocks, temperature, reasons)
  // The energy counter costs ~4 ms of CPU a read on an H200 (measured: 1 s spacing put the
  // sampler at 1.06% of a core, 5 s at 0.75%; docs/performance.md). Edges are always read, and
  // between reads the analysis integrates power, so 5 s loses no accuracy that matters.
  double energy_period_s = 5.0;
  double drain_period_s = 1.0;  // the driver's power buffer holds ~2.4 s at 20 ms
  // Offsets from the start where a window begins or ends: the energy counter is read exactly
  // there. Each ScheduledAction's time is an edge too.
  std::vector<double> window_edges_s;
  std::vector<ScheduledAction> actions;
  // Streaming hooks (e.g. a CSV writer), called as samples and steps arrive.
  std::function<void(const Sample&)> on_sample;
  std::function<void(const Step&)> on_step;
  // Polled every tick; true ends the run early (e.g. the user asked to stop).
  std::function<bool()> stop_requested;
  // Called every tick after the sample and the steps are in (and before stop_requested). For
  // windows decided while running (an adaptive sweep): a hook that has just set the next cap
  // returns Edge, and the loop at once takes one more sample with an energy reading, so the
  // counter marks where the new window starts. Stop ends the run like stop_requested.
  enum class TickAction { Continue, Edge, Stop };
  std::function<TickAction(double now_s)> on_tick;
};

enum class RunEnd { Duration, WorkloadFinished, StopRequested };

struct RunStats {
  double t_start_s = 0;  // run clock
  double t_end_s = 0;
  long ticks = 0;
  long energy_reads = 0;
  RunEnd ended_by = RunEnd::Duration;
  // CPU time of this process (all threads) while the loop ran, and the wall time it took: the
  // sampler's own cost, since the workload runs in another process.
  double cpu_s = 0;
  double wall_s = 0;
};

// The clock a run on `gpu` uses: its simulated clock if it has one, else `wall`.
Clock& clock_for(Gpu& gpu, Clock& wall);

// Runs `workload` on `gpu` and samples until the duration elapses, the workload ends, or a stop
// is requested; a workload still running at the end is stopped. Steps come from the workload.
Trace run(Gpu& gpu, Workload& workload, const RunOptions& options, Clock& clock,
          RunStats* stats = nullptr);
// Same, on clock_for(gpu, a fresh WallClock).
Trace run(Gpu& gpu, Workload& workload, const RunOptions& options, RunStats* stats = nullptr);

}  // namespace regime
