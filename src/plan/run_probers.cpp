#include "plan/run_probers.hpp"

#include <fmt/core.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"

namespace regime::plan {

namespace {

// Follows one probe's window on a growing trace: settle, warm-up steps, then measure.
class ProbeWindow {
 public:
  ProbeWindow(double cap_W, double set_at_s, const ProbeBudget& b)
      : cap_W_(cap_W), settle_until_s_(set_at_s + b.settle_s), b_(b) {}

  // Called on every tick with the trace so far; a result once the window is done.
  std::optional<ProbeResult> update(const Trace& trace, double now_s) {
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
    if (tight || out_of_time || m.steps >= b_.max_steps) return ProbeResult{cap_W_, m};
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

// The hand-off between the search (its own thread, blocked in probe()) and the run loop (this
// thread, which owns the GPU). Strict alternation keeps simulated runs deterministic.
struct Handoff {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<double> request_W;    // search -> loop
  std::optional<ProbeResult> result;  // loop -> search
  bool search_done = false;
  bool aborted = false;  // the run ended first
  std::exception_ptr error;
  std::optional<SearchOutcome> outcome;
};

class LiveProber : public Prober {
 public:
  explicit LiveProber(Handoff& h) : h_(h) {}
  ProbeResult probe(double cap_W) override {
    std::unique_lock lock(h_.mu);
    h_.request_W = cap_W;
    h_.cv.notify_all();
    h_.cv.wait(lock, [&] { return h_.result.has_value() || h_.aborted; });
    if (!h_.result)
      throw Error(ErrorKind::Internal, "the workload ended before the probe finished");
    ProbeResult r = std::move(*h_.result);
    h_.result.reset();
    return r;
  }

 private:
  Handoff& h_;
};

}  // namespace

SearchOutcome live_search(Gpu& gpu, Workload& workload, PowerLimitGuard& guard,
                          const ProbeBudget& budget,
                          const std::function<SearchOutcome(Prober&)>& run_search) {
  Handoff h;
  LiveProber prober(h);
  std::thread searcher([&] {
    try {
      auto outcome = run_search(prober);
      std::lock_guard lock(h.mu);
      h.outcome = std::move(outcome);
    } catch (...) {
      std::lock_guard lock(h.mu);
      h.error = std::current_exception();
    }
    std::lock_guard lock(h.mu);
    h.search_done = true;
    h.cv.notify_all();
  });
  auto release_searcher = [&] {
    {
      std::lock_guard lock(h.mu);
      h.aborted = true;
      h.cv.notify_all();
    }
    if (searcher.joinable()) searcher.join();
  };

  Trace seen;  // the run so far (the loop returns its trace only at the end)
  double now_s = 0;
  std::optional<ProbeWindow> window;
  // Waits (loop thread) until the search asks for a cap or is done; true when done.
  auto next_request = [&]() -> bool {
    std::unique_lock lock(h.mu);
    h.cv.wait(lock, [&] { return h.request_W.has_value() || h.search_done; });
    if (h.search_done) return true;
    double cap = *h.request_W;
    h.request_W.reset();
    lock.unlock();
    guard.set(cap);
    window.emplace(cap, now_s, budget);
    return false;
  };

  RunOptions ro;
  ro.duration_s = 0;  // until the search ends or the workload does
  ro.on_sample = [&](const Sample& s) {
    seen.samples.push_back(s);
    now_s = s.t_s;
  };
  ro.on_step = [&](const Step& s) { seen.steps.push_back(s); };
  bool first = true;
  ro.stop_requested = [&]() -> bool {
    if (first) {
      first = false;
      if (next_request()) return true;
    }
    if (!window) return true;
    auto r = window->update(seen, now_s);
    if (!r) return false;
    {
      std::lock_guard lock(h.mu);
      h.result = std::move(*r);
      h.cv.notify_all();
    }
    window.reset();
    return next_request();
  };

  RunStats stats;
  try {
    run(gpu, workload, ro, &stats);
  } catch (...) {
    release_searcher();
    throw;
  }
  bool done;
  {
    std::lock_guard lock(h.mu);
    done = h.search_done;
  }
  release_searcher();
  if (!done) {
    auto status = workload.exit_status();
    throw WorkloadEnded(
        fmt::format("the workload '{}' ended{} before the sweep finished", workload.name(),
                    status ? fmt::format(" with exit status {}", *status) : std::string()),
        status);
  }
  if (h.error) std::rethrow_exception(h.error);
  return std::move(*h.outcome);
}

RestartProber::RestartProber(Gpu& gpu, std::function<WorkloadPtr()> make_workload,
                             PowerLimitGuard& guard, ProbeBudget budget)
    : gpu_(gpu), make_workload_(std::move(make_workload)), guard_(guard), budget_(budget) {}

ProbeResult RestartProber::probe(double cap_W) {
  guard_.set(cap_W);
  WorkloadPtr w = make_workload_();
  Trace seen;
  double now_s = 0;
  std::optional<ProbeWindow> window;
  std::optional<ProbeResult> result;
  RunOptions ro;
  ro.duration_s = 0;
  ro.on_sample = [&](const Sample& s) {
    seen.samples.push_back(s);
    now_s = s.t_s;
    if (!window) window.emplace(cap_W, now_s, budget_);
  };
  ro.on_step = [&](const Step& s) { seen.steps.push_back(s); };
  ro.stop_requested = [&] {
    result = window->update(seen, now_s);
    return result.has_value();
  };
  run(gpu_, *w, ro);
  if (!result) {
    auto status = w->exit_status();
    throw Error(
        ErrorKind::Internal,
        fmt::format("the workload '{}' ended{} before the probe at {} W finished", w->name(),
                    status ? fmt::format(" with exit status {}", *status) : std::string(), cap_W));
  }
  return *result;
}

}  // namespace regime::plan
