#include "session/probe/probers.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "analysis/data_parallel.hpp"
#include "analysis/measure.hpp"
#include "analysis/phases.hpp"
#include "analysis/steady_state.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"

namespace regime::session {

namespace {

// Follows one probe's window on a growing trace: settle, warm-up steps, then measure. On a job of
// phases (a cycle found while the card would not settle, or known from an earlier probe through
// `cycle_s`), settling is judged cycle against cycle and the window is whole cycles from where
// one begins (analysis/phases.hpp, measure_cycles).
class ProbeWindow {
 public:
  ProbeWindow(double cap_W, double set_at_s, const ProbeBudget& b,
              std::optional<double>* cycle_s = nullptr)
      : cap_W_(cap_W), set_at_s_(set_at_s), b_(b), cycle_s_(cycle_s) {}

  // Called on every tick with the trace so far; a result once the window is done.
  std::optional<plan::ProbeResult> update(const Trace& trace, double now_s) {
    return update(std::vector<const Trace*>{&trace}, now_s);
  }

  // A job on several GPUs: one trace each, the steps shared. Settled when every GPU is; the
  // window is measured on each GPU and the job's figures combined (analysis/data_parallel.hpp).
  std::optional<plan::ProbeResult> update(const std::vector<const Trace*>& traces, double now_s) {
    if (!settled_ && !settle(traces, now_s)) return std::nullopt;
    if (cycle()) return update_cycles(traces, now_s);
    const Trace& trace = *traces.front();
    if (!measuring_) {
      start_measuring(trace, now_s);
      return std::nullopt;
    }
    bool out_of_time = now_s - start_s_ >= b_.max_probe_s;
    if (now_s < next_check_s_ && !out_of_time) return std::nullopt;
    next_check_s_ = now_s + b_.check_period_s;
    MeasureOptions opts;
    opts.detect_steady_state = false;  // settle and warm-up were skipped already
    opts.use_steps = !trace.steps.empty();
    Measurement m;
    try {
      per_gpu_.clear();
      for (const Trace* t : traces) per_gpu_.push_back(measure_window(*t, start_s_, now_s, opts));
      m = combine_data_parallel(per_gpu_);
    } catch (const Error&) {
      if (out_of_time) throw;
      return std::nullopt;  // too little in the window yet
    }
    bool tight = tight_enough(m, opts.use_steps);
    if (tight || out_of_time || m.steps >= b_.max_steps) return plan::ProbeResult{cap_W_, m, note_};
    return std::nullopt;
  }

  // Each GPU's figures over the window of the last result.
  const std::vector<Measurement>& per_gpu() const { return per_gpu_; }

 private:
  std::optional<double> cycle() const { return cycle_s_ ? *cycle_s_ : std::optional<double>(); }

  bool tight_enough(const Measurement& m, bool use_steps) const {
    double rel = m.energy_per_step_J > 0
                     ? (m.energy_per_step_ci_J.second - m.energy_per_step_ci_J.first) / 2 /
                           m.energy_per_step_J
                     : 1;
    return rel <= b_.target_rel_ci && (!use_steps || m.steps >= b_.min_steps);
  }

  // True once settled (or out of time): temperature and power flat over the last
  // settle_window_s, or on a job of phases over the last cycle against the one before.
  bool settle(const std::vector<const Trace*>& traces, double now_s) {
    if (now_s < set_at_s_ + b_.settle_s) return false;
    // The slopes are judged once per check period, not on every 10 ms tick.
    if (now_s < next_settle_check_s_) return false;
    next_settle_check_s_ = now_s + b_.check_period_s;
    if (cycle()) return settle_by_cycles(traces, now_s);
    // Temperature and power flat over the last settle_window_s (never reaching back before
    // the change), or the time limit.
    const double from_s = std::max(set_at_s_, now_s - b_.settle_window_s);
    TrailingSlopes sl;
    bool flat = true;
    for (const Trace* t : traces) {
      const int gpu = t->samples.empty() ? 0 : t->samples.front().gpu;
      TrailingSlopes one = trailing_slopes(*t, from_s, now_s, gpu);
      const bool one_flat = slopes_flat(one, b_.temp_slope_C_per_min, b_.power_slope_rel_per_min);
      if (t == traces.front() || (flat && !one_flat)) sl = one;
      flat = flat && one_flat;
    }
    const bool out_of_time = now_s >= set_at_s_ + b_.max_settle_s;
    if (!flat && !out_of_time) {
      look_for_cycle(*traces.front(), now_s);
      return false;
    }
    settled_ = true;
    settled_at_s_ = now_s;
    if (!flat)
      note_ = fmt::format(
          "not settled after {:g} s (temperature {:+.2f} C/min, power {:+.2f}%/min over the last "
          "{:g} s): the card may still be drifting",
          b_.max_settle_s, sl.temp_C ? sl.temp_C->per_min : 0.0,
          sl.power_rel ? 100 * sl.power_rel->per_min : 0.0, now_s - from_s);
    else
      note_ = fmt::format("settled {:.1f} s after the cap change", now_s - set_at_s_);
    return true;
  }

  // A card that will not settle may run a job of phases: once its phases recur three times
  // since the change, the probe follows their cycle.
  void look_for_cycle(const Trace& trace, double now_s) {
    if (!b_.whole_cycles || !cycle_s_ || now_s < next_cycle_look_s_) return;
    next_cycle_look_s_ = now_s + kCycleLookPeriod_s;
    const int gpu = trace.samples.empty() ? 0 : trace.samples.front().gpu;
    if (const auto c = cycle_to_follow(find_phases(trace, set_at_s_, now_s, gpu))) *cycle_s_ = c;
  }

  // Settled when, on every GPU, the last cycle's mean power and temperature match the one
  // before's within the slopes' tolerances; two whole cycles after the change at least.
  bool settle_by_cycles(const std::vector<const Trace*>& traces, double now_s) {
    const double c = *cycle();
    if (now_s < set_at_s_ + std::max(b_.settle_s, 2 * c)) return false;
    CycleDrift worst;
    bool flat = true;
    for (const Trace* t : traces) {
      const int gpu = t->samples.empty() ? 0 : t->samples.front().gpu;
      const std::optional<CycleDrift> d = cycle_drift(*t, now_s, c, gpu);
      const bool one_flat =
          d && std::abs(d->power_rel_per_min) <= b_.power_slope_rel_per_min &&
          (!d->temp_C_per_min || std::abs(*d->temp_C_per_min) <= b_.temp_slope_C_per_min);
      if (d && (t == traces.front() || (flat && !one_flat))) worst = *d;
      flat = flat && one_flat;
    }
    const bool out_of_time = now_s >= set_at_s_ + b_.max_settle_s;
    if (!flat && !out_of_time) return false;
    settled_ = true;
    settled_at_s_ = now_s;
    note_ = flat ? fmt::format(
                       "settled {:.1f} s after the cap change (cycle against cycle, {:.1f} s "
                       "each)",
                       now_s - set_at_s_, c)
                 : fmt::format(
                       "not settled after {:g} s (cycle against cycle: temperature {:+.2f} C/min, "
                       "power {:+.2f}%/min): the card may still be drifting",
                       b_.max_settle_s, worst.temp_C_per_min.value_or(0.0),
                       100 * worst.power_rel_per_min);
    return true;
  }

  void start_measuring(const Trace& trace, double now_s) {
    int warm = 0;
    for (auto it = trace.steps.rbegin(); it != trace.steps.rend(); ++it) {
      if (it->t_start_s < settled_at_s_) break;
      ++warm;
    }
    bool warmed = warm >= b_.warmup_steps;
    // Without steps (or with steps too slow to count) measure per second after settling.
    bool gave_up_waiting =
        now_s >= settled_at_s_ + (trace.steps.empty() ? b_.settle_s : b_.max_probe_s);
    if (!warmed && !gave_up_waiting) return;
    measuring_ = true;
    start_s_ = warmed ? trace.steps.back().t_end_s : now_s;
    next_check_s_ = now_s + b_.check_period_s;
  }

  // Whole cycles from where the next one begins (the start of the highest-power phase, found
  // over the last three cycles; now where the phases cannot be told apart at this cap), judged at
  // each cycle's end from the third on, and at most as many as max_probe_s holds.
  std::optional<plan::ProbeResult> update_cycles(const std::vector<const Trace*>& traces,
                                                 double now_s) {
    const double c = *cycle();
    const Trace& trace = *traces.front();
    if (!measuring_) {
      const int gpu = trace.samples.empty() ? 0 : trace.samples.front().gpu;
      PhaseSegmentation seg = find_phases(trace, std::max(set_at_s_, now_s - 3 * c), now_s, gpu);
      seg.cycle_s = c;
      const std::optional<double> next = seg.kinds() >= 2 ? next_cycle_start(seg, now_s) : now_s;
      measuring_ = true;
      start_s_ = next.value_or(now_s);
      max_cycles_ = std::max(1, static_cast<int>(std::floor(b_.max_probe_s / c)));
      cycles_ = std::min(kMinCycles, max_cycles_);
    }
    if (now_s < start_s_ + cycles_ * c) return std::nullopt;
    MeasureOptions opts;
    opts.use_steps = !trace.steps.empty();
    per_gpu_.clear();
    for (const Trace* t : traces)
      per_gpu_.push_back(measure_cycles(*t, start_s_, c, cycles_, opts));
    const Measurement m = combine_data_parallel(per_gpu_);
    if (tight_enough(m, opts.use_steps) || cycles_ >= max_cycles_ || m.steps >= b_.max_steps)
      return plan::ProbeResult{
          cap_W_, m,
          fmt::format("{}; measured over {} whole cycle(s) of {:.1f} s", note_, cycles_, c)};
    ++cycles_;
    return std::nullopt;
  }

  // How often a card that will not settle is searched for a cycle; cycles measured at least.
  static constexpr double kCycleLookPeriod_s = 4;
  static constexpr int kMinCycles = 3;

  std::vector<Measurement> per_gpu_;
  double cap_W_;
  double set_at_s_;
  ProbeBudget b_;
  std::optional<double>* cycle_s_;
  bool settled_ = false;
  double next_settle_check_s_ = 0;
  double next_cycle_look_s_ = 0;
  double settled_at_s_ = 0;
  std::string note_;
  bool measuring_ = false;
  double start_s_ = 0;
  double next_check_s_ = 0;
  int cycles_ = 0;
  int max_cycles_ = 0;
};

// Refuses a per-second window unless the budget accepts one.
// Markers that did come but were refused (zero-length steps among them) are named, since "no
// step markers arrived" alone would send the user looking in the wrong place.
void check_steps(const plan::ProbeResult& r, const ProbeBudget& b, const Workload& workload) {
  if (!r.measurement.per_second || b.accept_per_second) return;
  std::string why = no_step_markers_message(
      workload.name(), r.measurement.window_end_s - r.measurement.window_start_s);
  if (const long refused = workload.malformed_markers(); refused > 0)
    why += fmt::format(". {} step marker(s) were refused; the last: {}", refused,
                       workload.last_marker_error());
  throw Error(ErrorKind::InvalidArgument, why);
}

// The user's signal reached the workload (SIGINT, SIGTERM, SIGHUP passed on): the sweep ends
// now, as the workload does, with 128 + the signal as its status.
WorkloadFailed interrupted(int sig, const Workload& w) {
  return WorkloadFailed(fmt::format("interrupted by signal {} ({}), passed on to the workload '{}'",
                                    sig, ::strsignal(sig), w.name()),
                        128 + sig);
}

// After a live probe's window: the signal that interrupted the workload, or the workload's end
// before the window was done, as errors; else the window's steps checked against the budget.
void finished_window(const std::optional<plan::ProbeResult>& result, Workload& workload,
                     const ProbeBudget& budget) {
  if (int sig = workload.interrupted_by(); sig != 0) throw interrupted(sig, workload);
  if (!result) {
    auto status = workload.exit_status();
    throw WorkloadFailed(
        fmt::format("the workload '{}' ended{} before the sweep finished", workload.name(),
                    status ? fmt::format(" with exit status {}", *status) : std::string()),
        status);
  }
  check_steps(*result, budget, workload);
}

}  // namespace

std::string no_step_markers_message(const std::string& workload, double window_s) {
  return fmt::format(
      "no step markers arrived from '{}' in the first {:.0f} s window: without them regime "
      "cannot know the work done, so it does not decide by watts (a cap that slows the job looks "
      "like a saving per second). Mark each step: in Python, `import regime_step` and wrap each "
      "training step in `with regime_step.step():` or call `regime_step.mark()` at its end "
      "(python/regime_step, pip-installable; it finds regime through REGIME_STEP_SOCKET, which "
      "regime sets), or pass --step-regex REGEX matching a line the command prints once per step. "
      "To decide on energy per second anyway, pass --per-second",
      workload, window_s);
}

RestartProber::RestartProber(Gpu& gpu, Clock& clock, std::function<WorkloadPtr()> make_workload,
                             PowerLimitGuard& guard, ProbeBudget budget)
    : gpu_(gpu),
      clock_(clock),
      make_workload_(std::move(make_workload)),
      guard_(guard),
      budget_(budget) {}

plan::ProbeResult RestartProber::probe(double cap_W) {
  guard_.set(cap_W);
  WorkloadPtr w = make_workload_();
  RunOptions ro;
  ro.duration_s = 0;  // until the window is done or the workload ends
  RunLoop loop(gpu_, *w, ro, clock_);
  loop.start();
  ProbeWindow window(cap_W, loop.now_s(), budget_);
  std::optional<plan::ProbeResult> result;
  loop.run_until([&](const Trace& trace, double now_s) {
    if (w->interrupted_by() != 0) return true;
    result = window.update(trace, now_s);
    return result.has_value();
  });
  loop.finish();
  if (int sig = w->interrupted_by(); sig != 0) throw interrupted(sig, *w);
  if (!result) {
    auto status = w->exit_status();
    throw WorkloadFailed(
        fmt::format("the workload '{}' ended{} before the probe at {:g} W finished", w->name(),
                    status ? fmt::format(" with exit status {}", *status) : std::string(), cap_W),
        status);
  }
  check_steps(*result, budget_, *w);
  return *result;
}

LiveProber::LiveProber(RunLoop& loop, Workload& workload, std::function<void(double)> set_all,
                       ProbeBudget budget)
    : loop_(loop), workload_(workload), set_all_(std::move(set_all)), budget_(budget) {}

plan::ProbeResult LiveProber::probe(double cap_W) {
  set_all_(cap_W);
  ProbeWindow window(cap_W, loop_.now_s(), budget_, &cycle_s_);
  std::vector<const Trace*> traces;
  for (size_t i = 0; i < loop_.gpu_count(); ++i) traces.push_back(&loop_.trace(i));
  std::optional<plan::ProbeResult> result;
  loop_.run_until([&](const Trace&, double now_s) {
    if (workload_.interrupted_by() != 0) return true;
    result = window.update(traces, now_s);
    return result.has_value();
  });
  finished_window(result, workload_, budget_);
  per_gpu_.emplace(cap_W, window.per_gpu());  // the first at a cap: the table's row
  return *result;
}

}  // namespace regime::session
