#include "run/run_loop.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"
#include "run/wall_clock.hpp"

namespace regime {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

double process_cpu_s() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void validate(const RunOptions& o) {
  auto positive = [](double v, const char* what) {
    if (!(v > 0) || !std::isfinite(v))
      throw Error(
          ErrorKind::InvalidArgument,
          std::string(what) + " must be a positive number of seconds, got " + std::to_string(v));
  };
  positive(o.sample_period_s, "sample period");
  positive(o.energy_period_s, "energy period");
  positive(o.drain_period_s, "power-buffer drain period");
  for (const auto& a : o.actions) {
    if (!(a.at_s >= 0))
      throw Error(ErrorKind::InvalidArgument, "scheduled action at a negative time");
    if (!a.act) throw Error(ErrorKind::InvalidArgument, "scheduled action without a function");
  }
}

// Two instants closer than this are the same instant (floating-point sums of periods).
constexpr double kSameInstant_s = 1e-7;

// A periodic schedule on the grid origin + k * period. Absolute deadlines keep a 100 Hz loop from
// drifting; after a stall the missed ticks are skipped rather than taken in a burst.
class Grid {
 public:
  Grid(double origin_s, double period_s) : origin_s_(origin_s), period_s_(period_s) {}
  double next_s() const { return origin_s_ + static_cast<double>(k_) * period_s_; }
  // Moves to the first grid point after `now_s`.
  void pass(double now_s) {
    double k_after = std::floor((now_s + kSameInstant_s - origin_s_) / period_s_) + 1;
    k_ = std::max(k_ + 1, static_cast<long>(k_after));
  }

 private:
  double origin_s_;
  double period_s_;
  long k_ = 1;
};

// Window edges (offsets) from the options: explicit edges plus action times, sorted, unique.
std::vector<double> edge_offsets(const RunOptions& o) {
  std::vector<double> edges = o.window_edges_s;
  for (const auto& a : o.actions) edges.push_back(a.at_s);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

class Loop {
 public:
  Loop(Gpu& gpu, Workload& workload, const RunOptions& o, Clock& clock)
      : gpu_(gpu), workload_(workload), o_(o), clock_(clock), edges_(edge_offsets(o)) {
    action_order_.resize(o.actions.size());
    for (size_t i = 0; i < action_order_.size(); ++i) action_order_[i] = i;
    std::stable_sort(action_order_.begin(), action_order_.end(),
                     [&](size_t a, size_t b) { return o.actions[a].at_s < o.actions[b].at_s; });
  }

  Trace run(RunStats& stats) {
    // Reserve the whole run up front so the 100 Hz path never allocates.
    if (o_.duration_s > 0)
      trace_.samples.reserve(static_cast<size_t>(o_.duration_s / o_.sample_period_s) + 16 +
                             edges_.size());
    t0_ = clock_.now_s();
    stats.t_start_s = t0_;
    workload_.start(t0_);
    sample(t0_, true, stats);
    run_due_actions(t0_);

    double end_t = o_.duration_s > 0 ? t0_ + o_.duration_s : kNever;
    Grid ticks(t0_, o_.sample_period_s);
    Grid energy(t0_, o_.energy_period_s);
    Grid drains(t0_, o_.drain_period_s);
    for (;;) {
      double edge_t = next_edge_ < edges_.size() ? t0_ + edges_[next_edge_] : kNever;
      clock_.sleep_until_s(std::min({ticks.next_s(), edge_t, end_t}));
      double now = clock_.now_s();
      bool at_end = now >= end_t - kSameInstant_s;
      bool at_edge = now >= edge_t - kSameInstant_s;
      bool energy_due = at_end || at_edge || now >= energy.next_s() - kSameInstant_s;
      sample(now, energy_due, stats);
      if (energy_due) energy.pass(now);
      while (next_edge_ < edges_.size() && t0_ + edges_[next_edge_] <= now + kSameInstant_s)
        ++next_edge_;
      run_due_actions(now);
      if (now >= drains.next_s() - kSameInstant_s) {
        drain();
        drains.pass(now);
      }
      collect_steps();
      // Schedule from the time after this tick's work, so a slow read skips ticks.
      ticks.pass(clock_.now_s());
      ++stats.ticks;
      if (at_end) {
        stats.ended_by = RunEnd::Duration;
        break;
      }
      if (workload_.finished()) {
        stats.ended_by = RunEnd::WorkloadFinished;
        break;
      }
      if (o_.on_tick) {
        RunOptions::TickAction action = o_.on_tick(now);
        if (action == RunOptions::TickAction::Edge) {
          double edge_now = clock_.now_s();
          sample(edge_now, true, stats);
          energy.pass(edge_now);
        } else if (action == RunOptions::TickAction::Stop) {
          stats.ended_by = RunEnd::StopRequested;
          break;
        }
      }
      if (o_.stop_requested && o_.stop_requested()) {
        stats.ended_by = RunEnd::StopRequested;
        break;
      }
    }
    if (!workload_.finished()) workload_.stop();
    double t_end = clock_.now_s();
    // Close the run with an energy reading so the last window is bracketed by the counter.
    if (trace_.samples.empty() || !trace_.samples.back().energy_J.has_value())
      sample(t_end, true, stats);
    drain();
    collect_steps();
    stats.t_end_s = t_end;
    return std::move(trace_);
  }

 private:
  void sample(double now, bool with_energy, RunStats& stats) {
    Sample s = gpu_.read();
    s.t_s = now;
    if (with_energy) {
      s.energy_J = gpu_.read_energy_J();
      ++stats.energy_reads;
    }
    trace_.samples.push_back(s);
    if (o_.on_sample) o_.on_sample(trace_.samples.back());
  }

  void run_due_actions(double now) {
    while (next_action_ < action_order_.size()) {
      const ScheduledAction& a = o_.actions[action_order_[next_action_]];
      if (t0_ + a.at_s > now + kSameInstant_s) break;
      a.act(gpu_, now);
      ++next_action_;
    }
  }

  void drain() {
    // The driver's buffer reaches back ~2.4 s: the first drain holds points from before the run.
    for (const PowerPoint& p : gpu_.drain_power_points())
      if (p.t_s >= t0_) trace_.power_points.push_back(p);
  }

  void collect_steps() {
    auto steps = workload_.poll_steps();  // empty vectors do not allocate
    for (const Step& s : steps) {
      trace_.steps.push_back(s);
      if (o_.on_step) o_.on_step(s);
    }
  }

  Gpu& gpu_;
  Workload& workload_;
  const RunOptions& o_;
  Clock& clock_;
  std::vector<double> edges_;
  std::vector<size_t> action_order_;
  size_t next_edge_ = 0;
  size_t next_action_ = 0;
  double t0_ = 0;
  Trace trace_;
};

}  // namespace

Clock& clock_for(Gpu& gpu, Clock& wall) {
  Clock* simulated = gpu.simulated_clock();
  return simulated != nullptr ? *simulated : wall;
}

Trace run(Gpu& gpu, Workload& workload, const RunOptions& options, Clock& clock, RunStats* stats) {
  validate(options);
  RunStats local;
  RunStats& st = stats != nullptr ? *stats : local;
  double cpu0 = process_cpu_s();
  auto wall0 = std::chrono::steady_clock::now();
  Loop loop(gpu, workload, options, clock);
  Trace trace = loop.run(st);
  st.cpu_s = process_cpu_s() - cpu0;
  st.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return trace;
}

Trace run(Gpu& gpu, Workload& workload, const RunOptions& options, RunStats* stats) {
  WallClock wall;
  return run(gpu, workload, options, clock_for(gpu, wall), stats);
}

}  // namespace regime
