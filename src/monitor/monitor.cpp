#include "monitor/monitor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "analysis/measure.hpp"
#include "common/json_fields.hpp"
#include "monitor/monitor_devices.hpp"
#include "run/run_loop.hpp"
#include "run/wall_clock.hpp"
#include "run/workload.hpp"

namespace regime::monitor {

namespace {

// The caller's own process is the work: it never ends by itself, and its steps are the ones
// mark_step() queued.
class CallerSteps final : public Workload {
 public:
  std::string name() const override { return "this process"; }
  void start(double) override {}
  std::vector<Step> poll_steps() override {
    std::lock_guard lock(mutex_);
    std::vector<Step> out;
    out.swap(steps_);
    return out;
  }
  bool finished() override { return false; }
  void stop() override {}
  std::optional<int> exit_status() override { return std::nullopt; }
  void add(const Step& s) {
    std::lock_guard lock(mutex_);
    steps_.push_back(s);
  }

 private:
  std::mutex mutex_;
  std::vector<Step> steps_;
};

void check_period(const char* what, double s) {
  if (!(s > 0) || !std::isfinite(s) || s > 3600)
    throw Error(
        ErrorKind::InvalidArgument,
        std::string(what) + " must be above 0 and at most 3600 s, not " + std::to_string(s));
}

// The trace with a counter reading the monitor took itself put on the sample of its tick, as
// the run loop puts its own (stamped where the counter was read).
Trace with_reading(const Trace& trace, double tick_s, double read_s, double energy_J) {
  Trace out = trace;
  for (Sample& s : out.samples)
    if (s.t_s == tick_s && !s.energy_J) {
      s.energy_J = energy_J;
      s.t_s = std::max(tick_s, read_s);
      break;
    }
  return out;
}

}  // namespace

WindowFigures window_figures(const Trace& trace, const std::string& name, double t0_s,
                             double t1_s) {
  WindowFigures w;
  w.name = name;
  w.t_start_s = t0_s;
  w.t_end_s = t1_s;
  w.time_s = t1_s - t0_s;
  MeasureOptions whole;
  whole.use_steps = false;
  whole.detect_steady_state = false;
  const Measurement m = measure_window(trace, t0_s, t1_s, whole);
  if (m.energy_source == EnergySource::None)
    throw Error(ErrorKind::NotSupported,
                "window '" + name + "': the GPU gave no power or energy readings in it");
  const double measured_s = m.window_end_s - m.window_start_s;
  w.energy_J = m.energy_J;
  w.energy_ci_J = {m.energy_per_step_ci_J.first * measured_s,
                   m.energy_per_step_ci_J.second * measured_s};
  w.avg_power_W = m.avg_power_W;
  w.energy_source = energy_source_name(m.energy_source);
  w.energy_detail = m.energy_detail;
  w.samples = m.samples;
  for (const PowerPoint& p : trace.power_points)
    if (p.t_s >= t0_s && p.t_s <= t1_s) ++w.power_points;
  for (const Step& s : trace.steps)
    if (s.t_start_s >= t0_s && s.t_end_s <= t1_s) ++w.steps;
  if (w.steps > 0) {
    MeasureOptions per_step;
    per_step.detect_steady_state = false;
    const Measurement ms = measure_window(trace, t0_s, t1_s, per_step);
    w.energy_per_step_J = ms.energy_per_step_J;
    w.energy_per_step_ci_J = ms.energy_per_step_ci_J;
    w.time_per_step_s = ms.time_per_step_s;
    w.time_per_step_ci_s = ms.time_per_step_ci_s;
  }
  return w;
}

nlohmann::json to_json(const WindowFigures& w) {
  return {{"name", w.name},
          {"t_start_s", w.t_start_s},
          {"t_end_s", w.t_end_s},
          {"time_s", w.time_s},
          {"steps", w.steps},
          {"energy_J", w.energy_J},
          {"energy_ci_J", json_interval(w.energy_ci_J)},
          {"avg_power_W", w.avg_power_W},
          {"energy_source", w.energy_source},
          {"energy_detail", w.energy_detail},
          {"energy_per_step_J", json_or_null(w.energy_per_step_J)},
          {"energy_per_step_ci_J", json_or_null(w.energy_per_step_ci_J)},
          {"time_per_step_s", json_or_null(w.time_per_step_s)},
          {"time_per_step_ci_s", json_or_null(w.time_per_step_ci_s)},
          {"samples", w.samples},
          {"power_points", w.power_points}};
}

// The GPU, its clock and the run loop, owned together and used only by the sampling thread
// once started.
class Monitor::Loop {
 public:
  Loop(GpuPtr gpu, const MonitorOptions& o)
      : gpu_(std::move(gpu)), run_(*gpu_, steps_, options(o), clock_) {}
  static RunOptions options(const MonitorOptions& o) {
    RunOptions r;
    r.duration_s = 0;  // until stopped
    r.sample_period_s = o.sample_period_s;
    r.energy_period_s = o.energy_period_s;
    r.drain_period_s = o.drain_period_s;
    return r;
  }
  GpuPtr gpu_;
  CallerSteps steps_;
  WallClock clock_;
  RunLoop run_;
};

Monitor::Monitor(MonitorOptions options) : options_(std::move(options)) {
  check_period("sample period", options_.sample_period_s);
  check_period("energy period", options_.energy_period_s);
  check_period("drain period", options_.drain_period_s);
  if (!(options_.edge_read_min_s >= 0))
    throw Error(ErrorKind::InvalidArgument, "the edge-read window length must be 0 s or more");
  GpuPtr gpu = open_monitor_device(options_.device);
  info_ = gpu->info();
  loop_ = std::make_unique<Loop>(std::move(gpu), options_);
  loop_->run_.start();  // the first sample, here, so a window begun next has one before it
  started_s_ = loop_->run_.t_start_s();
  thread_ = std::thread([this] {
    try {
      loop_->run_.run_until([this](const Trace& trace, double now_s) {
        serve(trace, now_s);
        std::lock_guard lock(mutex_);
        return stop_;
      });
      loop_->run_.finish();
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      loop_error_ = std::string("sampling stopped: ") + e.what();
      for (auto& [id, p] : pending_) done_[id] = Done{std::nullopt, loop_error_, ErrorKind::Io};
      pending_.clear();
      ready_.notify_all();
    }
  });
}

Monitor::~Monitor() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

double Monitor::now_s() const { return loop_->clock_.unix_now_s(); }

namespace {
// A window's name is a label: one past this size is a mistake, and would be kept in memory.
constexpr size_t kMaxWindowNameBytes = 1024;
void check_window_name(const std::string& name) {
  if (name.size() > kMaxWindowNameBytes)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("a window name is at most {} bytes; this one is {}",
                            kMaxWindowNameBytes, name.size()));
}
}  // namespace

void Monitor::begin_window(const std::string& name) {
  check_window_name(name);
  // The loop keeps the driver's power points from its start on, one every 20 ms: a window
  // opened just after the monitor would begin before the first of them, and fall back to the
  // coarser polled power. Waiting that long (once, at most 50 ms) keeps it on the buffer.
  constexpr double kFirstPoints_s = 0.05;
  if (now_s() < started_s_ + kFirstPoints_s)
    std::this_thread::sleep_for(
        std::chrono::duration<double>(started_s_ + kFirstPoints_s - now_s()));
  const double t = now_s();
  std::lock_guard lock(mutex_);
  if (!loop_error_.empty()) throw Error(ErrorKind::Io, loop_error_);
  if (!open_.emplace(name, t).second)
    throw Error(ErrorKind::InvalidArgument, "a window named '" + name + "' is already open");
}

int64_t Monitor::end_window(const std::string& name) {
  const double t = now_s();
  std::lock_guard lock(mutex_);
  auto it = open_.find(name);
  if (it == open_.end())
    throw Error(ErrorKind::InvalidArgument, "no window named '" + name + "' is open");
  const int64_t id = next_id_++;
  if (loop_error_.empty())
    pending_[id] = Pending{name, it->second, t, t - it->second >= options_.edge_read_min_s, {}};
  else
    done_[id] = Done{std::nullopt, loop_error_, ErrorKind::Io};
  open_.erase(it);
  return id;
}

void Monitor::cancel_window(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (open_.erase(name) == 0)
    throw Error(ErrorKind::InvalidArgument, "no window named '" + name + "' is open");
}

std::optional<WindowFigures> Monitor::figures(int64_t id, double timeout_s) {
  std::unique_lock lock(mutex_);
  if (id < 0 || id >= next_id_ || (!pending_.count(id) && !done_.count(id)))
    throw Error(ErrorKind::NotFound,
                "no window with id " + std::to_string(id) + " (or its figures were taken)");
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::clamp(timeout_s, 0.0, 1e6));
  ready_.wait_until(lock, deadline, [&] { return done_.count(id) > 0; });
  auto it = done_.find(id);
  if (it == done_.end()) return std::nullopt;
  Done done = std::move(it->second);
  done_.erase(it);  // handed over once: a caller keeps what it was given
  if (!done.figures) throw Error(done.kind, done.error);
  return done.figures;
}

void Monitor::mark_step(double t_start_s, double t_end_s) {
  if (!(t_end_s >= t_start_s) || !std::isfinite(t_start_s) || !std::isfinite(t_end_s))
    throw Error(ErrorKind::InvalidArgument, "a step must end at or after its start (" +
                                                std::to_string(t_start_s) + ", " +
                                                std::to_string(t_end_s) + ")");
  int64_t n = 0;
  {
    std::lock_guard lock(mutex_);
    n = next_step_++;
  }
  loop_->steps_.add(Step{n, t_start_s, t_end_s});
}

void Monitor::read_edges(const Trace& trace, double now_s) {
  std::vector<int64_t> wanted;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, p] : pending_)
      if (p.edge_read && now_s >= p.t1_s) wanted.push_back(id);
  }
  if (wanted.empty() || trace.samples.empty()) return;
  // This tick's sample: a reading of the loop's there already brackets the windows; else one
  // read, stamped on it, serves every window that ended before it.
  const Sample& last = trace.samples.back();
  std::optional<CounterRead> read;
  if (!last.energy_J) {
    if (last.t_s != now_s) return;
    const double before_s = loop_->clock_.unix_now_s();
    if (const std::optional<double> energy_J = loop_->gpu_->read_energy_J())
      read = CounterRead{now_s, 0.5 * (before_s + loop_->clock_.unix_now_s()), *energy_J};
  }
  std::lock_guard lock(mutex_);
  for (int64_t id : wanted)
    if (auto it = pending_.find(id); it != pending_.end()) {
      it->second.edge_read = false;
      it->second.after = read;
    }
}

Monitor::Done Monitor::measure(const Trace& trace, const Pending& p) const {
  try {
    if (p.after)
      return {
          window_figures(with_reading(trace, p.after->tick_s, p.after->read_s, p.after->energy_J),
                         p.name, p.t0_s, p.t1_s),
          {},
          {}};
    return {window_figures(trace, p.name, p.t0_s, p.t1_s), {}, {}};
  } catch (const Error& e) {
    return {std::nullopt, e.what(), e.kind()};
  } catch (const std::exception& e) {
    return {std::nullopt, e.what(), ErrorKind::Internal};
  }
}

void Monitor::serve(const Trace& trace, double now_s) {
  read_edges(trace, now_s);
  // A window is measured once a drain of the power buffer has certainly followed its end (and,
  // when asked for, the counter has been read after it).
  const double settle_s = options_.drain_period_s + 1e-3;
  std::vector<std::pair<int64_t, Pending>> due;
  double keep_from_s = now_s - 2 * settle_s;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, p] : pending_)
      if (now_s >= p.t1_s + settle_s && !p.edge_read) due.emplace_back(id, p);
    for (const auto& [name, t0] : open_) keep_from_s = std::min(keep_from_s, t0);
    for (const auto& [id, p] : pending_) keep_from_s = std::min(keep_from_s, p.t0_s);
  }
  std::vector<std::pair<int64_t, Done>> results;
  for (const auto& [id, p] : due) results.emplace_back(id, measure(trace, p));
  if (!results.empty()) {
    std::lock_guard lock(mutex_);
    for (auto& [id, d] : results) {
      pending_.erase(id);
      done_[id] = std::move(d);
    }
    ready_.notify_all();
  }
  // Memory stays flat however long the process runs: only what open and pending windows need
  // (from a counter reading before their start) is kept.
  loop_->run_.forget_before(keep_from_s - settle_s);
}

}  // namespace regime::monitor
