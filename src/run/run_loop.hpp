#pragma once
// The one run loop: samples a GPU while a workload runs, on a clock (simulated for sim: devices,
// else the wall clock), and builds the Trace. A job on several GPUs (data parallel) is one
// workload sampled on each of its GPUs at the same instants: one Trace per GPU, each carrying the
// job's shared steps. It never changes a power limit by itself. It is
// resumable: a caller that changes the cap between windows (a live sweep) runs it until a window
// is done, sets the cap through the guard, and runs it on, all on one thread.
#include <functional>
#include <optional>
#include <vector>

#include "common/clock.hpp"
#include "device/gpu.hpp"
#include "run/workload.hpp"
#include "trace/trace.hpp"

namespace regime {

struct RunOptions {
  double duration_s = 60;         // run length on the run clock; <= 0: until the workload ends
  double sample_period_s = 0.01;  // cheap fields (power, clocks, temperature, reasons)
  // The energy counter costs ~4 ms of CPU a read on an H200 (measured: 1 s spacing put the
  // sampler at 1.06% of a core, 5 s at 0.75%; docs/performance.md). The start and the end are
  // always read, and between reads the analysis integrates power, so 5 s loses no accuracy.
  double energy_period_s = 5.0;
  double drain_period_s = 1.0;  // the driver's power buffer holds ~2.4 s at 20 ms
  // Streaming hooks (e.g. a CSV writer), called as samples and steps arrive.
  std::function<void(const Sample&)> on_sample;
  std::function<void(const Step&)> on_step;
};

enum class RunEnd { Duration, WorkloadFinished, StopRequested };

// How long work that was passed the user's SIGINT/SIGTERM/SIGHUP may go on before the run stops
// it (SIGTERM, then SIGKILL after the workload's own grace).
inline constexpr double kInterruptGrace_s = 5;

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
  // Device reads retried after a transient error, and reads given up (Gpu::read_health()).
  long read_retries = 0;
  long failed_reads = 0;
};

// Decides, after each tick's sample and steps are in, whether the caller's wait is over.
using UntilFn = std::function<bool(const Trace& so_far, double now_s)>;

class RunLoop {
 public:
  // Error InvalidArgument for a non-positive period. Nothing starts until start().
  RunLoop(Gpu& gpu, Workload& workload, RunOptions options, Clock& clock);
  // Several GPUs on one clock (Error InvalidArgument when empty): samples every GPU on each tick;
  // on_sample is called once per GPU, on_step once per step.
  RunLoop(std::vector<Gpu*> gpus, Workload& workload, RunOptions options, Clock& clock);
  ~RunLoop();
  RunLoop(const RunLoop&) = delete;
  RunLoop& operator=(const RunLoop&) = delete;

  // Starts the workload and takes the first sample (with an energy reading).
  void start();
  // Ticks until `until` returns true (StopRequested), the duration elapses (Duration) or the
  // workload ends (WorkloadFinished). Once the duration or the workload has ended, returns at once.
  RunEnd run_until(const UntilFn& until);
  // Stops a workload still running, closes the trace with an energy reading and returns it.
  Trace finish(RunStats* stats = nullptr);
  // The same for every GPU, in the order given: one Trace each.
  std::vector<Trace> finish_all(RunStats* stats = nullptr);

  const Trace& trace() const { return lanes_.front().trace; }  // the first GPU's
  const Trace& trace(size_t gpu) const { return lanes_.at(gpu).trace; }
  size_t gpu_count() const { return lanes_.size(); }
  double now_s() const { return now_s_; }     // the time of the latest sample
  double t_start_s() const { return t0_s_; }  // the first sample's time, run clock

  // Lets a long run keep memory flat: drops each GPU's samples, steps and power points from
  // before t_s, keeping the last sample with an energy reading at or before t_s (and all that
  // follows it), so a window that starts at t_s is still bracketed by the counter. A caller that
  // has measured what it needs up to t_s calls this; trace() then starts near t_s.
  void forget_before(double t_s);

 private:
  // A periodic schedule on origin + k * period. Absolute deadlines keep a 100 Hz loop from
  // drifting; after a stall the missed ticks are skipped rather than taken in a burst.
  struct Grid {
    double origin_s = 0;
    double period_s = 1;
    long k = 1;
    double next_s() const { return origin_s + static_cast<double>(k) * period_s; }
    void pass(double now_s);  // moves to the first grid point after now_s
  };

  // One GPU's energy counter and where it was read: the middle of the call.
  struct CounterReading {
    std::optional<double> energy_J;
    double t_s = 0;
  };
  struct Lane;

  void tick();
  CounterReading read_counter(Lane& lane);
  std::vector<CounterReading> read_counters();
  void sample(double now, bool with_energy);
  void keep(Lane& lane, const Sample& s);
  void drain();
  void collect_steps();

  // One sampled GPU and what it recorded.
  struct Lane {
    Gpu* gpu = nullptr;
    ReadHealth health0;
    Trace trace;
  };
  std::vector<Lane> lanes_;
  Workload& workload_;
  RunOptions o_;
  Clock& clock_;
  RunStats stats_;
  double t0_s_ = 0;
  double now_s_ = 0;
  double end_s_ = 0;
  Grid ticks_, energy_, drains_;
  std::optional<RunEnd> ended_;
  std::optional<double> interrupted_at_s_;  // wall time the work was first seen interrupted
  void stop_if_interrupted_long_ago();
  bool started_ = false;
  bool finished_ = false;
  double cpu0_s_ = 0;
  double wall0_s_ = 0;
};

// Runs `workload` on `gpu` until the duration elapses or the workload ends; a workload still
// running then is stopped. Steps come from the workload.
Trace run(Gpu& gpu, Workload& workload, const RunOptions& options, Clock& clock,
          RunStats* stats = nullptr);
// One workload on several GPUs: one Trace per GPU, in the order given.
std::vector<Trace> run(const std::vector<Gpu*>& gpus, Workload& workload, const RunOptions& options,
                       Clock& clock, RunStats* stats = nullptr);

}  // namespace regime
