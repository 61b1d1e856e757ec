#include "session/probers.hpp"

#include <fmt/core.h>

#include <cstring>
#include <optional>

#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"

namespace regime::session {

namespace {

// Follows one probe's window on a growing trace: settle, warm-up steps, then measure.
class ProbeWindow {
 public:
  ProbeWindow(double cap_W, double set_at_s, const ProbeBudget& b)
      : cap_W_(cap_W), settle_until_s_(set_at_s + b.settle_s), b_(b) {}

  // Called on every tick with the trace so far; a result once the window is done.
  std::optional<plan::ProbeResult> update(const Trace& trace, double now_s) {
    if (!measuring_) {
      if (now_s < settle_until_s_) return std::nullopt;
      int warm = 0;
      for (auto it = trace.steps.rbegin(); it != trace.steps.rend(); ++it) {
        if (it->t_start_s < settle_until_s_) break;
        ++warm;
      }
      bool warmed = warm >= b_.warmup_steps;
      // Without steps (or with steps too slow to count) measure per second after settling.
      bool gave_up_waiting =
          now_s >= settle_until_s_ + (trace.steps.empty() ? b_.settle_s : b_.max_probe_s);
      if (!warmed && !gave_up_waiting) return std::nullopt;
      measuring_ = true;
      start_s_ = warmed ? trace.steps.back().t_end_s : now_s;
      next_check_s_ = now_s + b_.check_period_s;
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
      m = measure_window(trace, start_s_, now_s, opts);
    } catch (const Error&) {
      if (out_of_time) throw;
      return std::nullopt;  // too little in the window yet
    }
    double rel = m.energy_per_step_J > 0
                     ? (m.energy_per_step_ci_J.second - m.energy_per_step_ci_J.first) / 2 /
                           m.energy_per_step_J
                     : 1;
    bool tight = rel <= b_.target_rel_ci && (!opts.use_steps || m.steps >= b_.min_steps);
    if (tight || out_of_time || m.steps >= b_.max_steps) return plan::ProbeResult{cap_W_, m};
    return std::nullopt;
  }

 private:
  double cap_W_;
  double settle_until_s_;
  ProbeBudget b_;
  bool measuring_ = false;
  double start_s_ = 0;
  double next_check_s_ = 0;
};

// The user's signal reached the workload (SIGINT, SIGTERM, SIGHUP passed on): the sweep ends
// now, as the workload does, with 128 + the signal as its status.
WorkloadFailed interrupted(int sig, const Workload& w) {
  return WorkloadFailed(fmt::format("interrupted by signal {} ({}), passed on to the workload '{}'",
                                    sig, ::strsignal(sig), w.name()),
                        128 + sig);
}

}  // namespace

LiveProber::LiveProber(RunLoop& loop, Workload& workload, PowerLimitGuard& guard,
                       ProbeBudget budget)
    : loop_(loop), workload_(workload), guard_(guard), budget_(budget) {}

plan::ProbeResult LiveProber::probe(double cap_W) {
  guard_.set(cap_W);
  ProbeWindow window(cap_W, loop_.now_s(), budget_);
  std::optional<plan::ProbeResult> result;
  loop_.run_until([&](const Trace& trace, double now_s) {
    if (workload_.interrupted_by() != 0) return true;
    result = window.update(trace, now_s);
    return result.has_value();
  });
  if (int sig = workload_.interrupted_by(); sig != 0) throw interrupted(sig, workload_);
  if (!result) {
    auto status = workload_.exit_status();
    throw WorkloadFailed(
        fmt::format("the workload '{}' ended{} before the sweep finished", workload_.name(),
                    status ? fmt::format(" with exit status {}", *status) : std::string()),
        status);
  }
  return *result;
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
  return *result;
}

}  // namespace regime::session
