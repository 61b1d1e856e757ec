#include "run/run_loop.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.hpp"

namespace regime {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// Two instants closer than this are the same instant (floating-point sums of periods).
constexpr double kSameInstant_s = 1e-7;
// Samples reserved at the start: a 5-minute stretch (4.6 MB at 10 ms), the span a long run keeps.
constexpr double kReserve_s = 300;

double process_cpu_s() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
  if (std::isnan(o.duration_s) || std::isinf(o.duration_s))
    throw Error(ErrorKind::InvalidArgument, "run duration must be a finite number of seconds");
}

}  // namespace

void RunLoop::Grid::pass(double now_s) {
  double k_after = std::floor((now_s + kSameInstant_s - origin_s) / period_s) + 1;
  k = std::max(k + 1, static_cast<long>(k_after));
}

RunLoop::RunLoop(Gpu& gpu, Workload& workload, RunOptions options, Clock& clock)
    : RunLoop(std::vector<Gpu*>{&gpu}, workload, std::move(options), clock) {}

RunLoop::RunLoop(std::vector<Gpu*> gpus, Workload& workload, RunOptions options, Clock& clock)
    : workload_(workload), o_(std::move(options)), clock_(clock) {
  validate(o_);
  if (gpus.empty()) throw Error(ErrorKind::InvalidArgument, "run loop: no GPU to sample");
  for (Gpu* g : gpus) {
    if (g == nullptr) throw Error(ErrorKind::Internal, "run loop: null GPU");
    lanes_.push_back(Lane{g, {}, {}});
  }
}

RunLoop::~RunLoop() {
  // A loop abandoned by an exception must not leave its workload running.
  if (started_ && !finished_ && !workload_.finished()) {
    try {
      workload_.stop();
    } catch (...) {
    }
  }
}

void RunLoop::start() {
  // Reserve up to kReserve_s of samples up front so the 100 Hz path rarely allocates; a long run
  // that forgets what it has measured (forget_before) then never grows past it.
  for (Lane& lane : lanes_) {
    if (o_.duration_s > 0)
      lane.trace.samples.reserve(
          static_cast<size_t>(std::min(o_.duration_s, kReserve_s) / o_.sample_period_s) + 16);
    lane.health0 = lane.gpu->read_health();
  }
  cpu0_s_ = process_cpu_s();
  wall0_s_ = steady_s();
  // The counters are read before the work starts, so that their first readings bracket the
  // first step (which starts with the work) however long the reads take; the other readings of
  // that first sample come once the work has started, as every tick's do.
  const std::vector<CounterReading> counters = read_counters();
  t0_s_ = clock_.now_s();
  stats_.t_start_s = t0_s_;
  end_s_ = o_.duration_s > 0 ? t0_s_ + o_.duration_s : kNever;
  ticks_ = {t0_s_, o_.sample_period_s};
  energy_ = {t0_s_, o_.energy_period_s};
  drains_ = {t0_s_, o_.drain_period_s};
  workload_.start(t0_s_);
  started_ = true;
  for (size_t k = 0; k < lanes_.size(); ++k) {
    Sample first = lanes_[k].gpu->read();
    first.t_s = counters[k].t_s;
    first.energy_J = counters[k].energy_J;
    keep(lanes_[k], first);
  }
  now_s_ = t0_s_;
}

void RunLoop::tick() {
  const double next_s = std::min(ticks_.next_s(), end_s_);
  // Between ticks, the steps alone as often as the work asks (a sender of one datagram per step),
  // and the tick at once when the work ends meanwhile.
  bool work_ended = false;
  for (double period = workload_.step_poll_period_s();
       period > 0 && clock_.now_s() + period < next_s; period = workload_.step_poll_period_s()) {
    clock_.sleep_until_s(clock_.now_s() + period);
    collect_steps();
    if ((work_ended = workload_.finished())) break;
  }
  if (!work_ended) clock_.sleep_until_s(next_s);
  double now = clock_.now_s();
  bool at_end = now >= end_s_ - kSameInstant_s;
  bool energy_due = at_end || now >= energy_.next_s() - kSameInstant_s;
  sample(now, energy_due);
  if (energy_due) energy_.pass(now);
  if (now >= drains_.next_s() - kSameInstant_s) {
    drain();
    drains_.pass(now);
  }
  collect_steps();
  stop_if_interrupted_long_ago();
  // Schedule from the time after this tick's work, so a slow read skips ticks.
  ticks_.pass(clock_.now_s());
  ++stats_.ticks;
  if (at_end)
    ended_ = RunEnd::Duration;
  else if (workload_.finished())
    ended_ = RunEnd::WorkloadFinished;
}

void RunLoop::stop_if_interrupted_long_ago() {
  // The user's signal was passed on to the work; work that shrugs it off is stopped after a
  // grace (room for a checkpoint), so an interrupted run always ends.
  if (workload_.interrupted_by() == 0 || workload_.finished()) return;
  double now = steady_s();
  if (!interrupted_at_s_) interrupted_at_s_ = now;
  if (now - *interrupted_at_s_ >= kInterruptGrace_s) workload_.stop();
}

RunEnd RunLoop::run_until(const UntilFn& until) {
  if (!started_) throw Error(ErrorKind::Internal, "run loop: run_until before start");
  while (!ended_) {
    tick();
    if (!ended_ && until && until(trace(), now_s_)) return RunEnd::StopRequested;
  }
  return *ended_;
}

Trace RunLoop::finish(RunStats* stats) {
  std::vector<Trace> all = finish_all(stats);
  return std::move(all.front());
}

std::vector<Trace> RunLoop::finish_all(RunStats* stats) {
  if (!started_) throw Error(ErrorKind::Internal, "run loop: finish before start");
  stats_.ended_by = ended_.value_or(RunEnd::StopRequested);
  if (!workload_.finished()) workload_.stop();
  finished_ = true;
  collect_steps();
  double t_end = clock_.now_s();
  // Close the run with an energy reading so the last window is bracketed by the counter, and
  // after the last step: markers that arrive while the work is being stopped (a helper's last
  // batch, sent on SIGTERM) end after the final tick, and a step with no reading after it
  // leaves the window without energy.
  const Trace& first = trace();
  const bool steps_past_end = !first.steps.empty() && !first.samples.empty() &&
                              first.steps.back().t_end_s > first.samples.back().t_s;
  if (first.samples.empty() || !first.samples.back().energy_J.has_value() || steps_past_end)
    sample(steps_past_end ? std::max(t_end, first.steps.back().t_end_s) : t_end, true);
  drain();
  collect_steps();
  stats_.t_end_s = t_end;
  stats_.cpu_s = process_cpu_s() - cpu0_s_;
  stats_.wall_s = steady_s() - wall0_s_;
  stats_.read_retries = 0;
  stats_.failed_reads = 0;
  for (const Lane& lane : lanes_) {
    stats_.read_retries += lane.gpu->read_health().retried_reads - lane.health0.retried_reads;
    stats_.failed_reads += lane.gpu->read_health().failed_reads - lane.health0.failed_reads;
  }
  if (stats != nullptr) *stats = stats_;
  std::vector<Trace> out;
  for (Lane& lane : lanes_) out.push_back(std::move(lane.trace));
  return out;
}

RunLoop::CounterReading RunLoop::read_counter(Lane& lane) {
  const double before_s = clock_.now_s();
  CounterReading r;
  r.energy_J = lane.gpu->read_energy_J();
  r.t_s = 0.5 * (before_s + clock_.now_s());
  ++stats_.energy_reads;
  return r;
}

std::vector<RunLoop::CounterReading> RunLoop::read_counters() {
  std::vector<CounterReading> out;
  for (Lane& lane : lanes_) out.push_back(read_counter(lane));
  return out;
}

void RunLoop::keep(Lane& lane, const Sample& s) {
  lane.trace.samples.push_back(s);
  if (o_.on_sample) o_.on_sample(lane.trace.samples.back());
}

void RunLoop::sample(double now, bool with_energy) {
  // Every GPU is stamped with the tick's instant, so the job's figures compare window by
  // window; a sample with a counter reading is stamped where the counter was read instead. That
  // read comes after the other reads of every GPU before it and takes milliseconds (an H200's
  // firmware round trip, a busy host), and the counter fixes each segment's energy: a first read
  // 50 ms later than its stamp and a last one on time would say 50 ms x power too little.
  for (Lane& lane : lanes_) {
    Sample s = lane.gpu->read();
    s.t_s = now;
    if (with_energy) {
      const CounterReading r = read_counter(lane);
      s.energy_J = r.energy_J;
      s.t_s = std::max(now, r.t_s);
    }
    keep(lane, s);
  }
  now_s_ = now;
}

void RunLoop::forget_before(double t_s) {
  for (Lane& lane : lanes_) {
    Trace& tr = lane.trace;
    auto after = std::partition_point(tr.samples.begin(), tr.samples.end(),
                                      [&](const Sample& s) { return s.t_s <= t_s; });
    // Back to the last counter reading at or before t_s.
    auto keep = after;
    while (keep != tr.samples.begin() && !std::prev(keep)->energy_J) --keep;
    if (keep == tr.samples.begin()) continue;  // no reading to anchor on: keep everything
    const double from_s = std::prev(keep)->t_s;
    tr.samples.erase(tr.samples.begin(), std::prev(keep));
    tr.steps.erase(tr.steps.begin(),
                   std::partition_point(tr.steps.begin(), tr.steps.end(),
                                        [&](const Step& s) { return s.t_start_s < from_s; }));
    tr.power_points.erase(
        tr.power_points.begin(),
        std::partition_point(tr.power_points.begin(), tr.power_points.end(),
                             [&](const PowerPoint& p) { return p.t_s < from_s; }));
  }
}

void RunLoop::drain() {
  // The driver's buffer reaches back ~2.4 s: the first drain holds points from before the run.
  for (Lane& lane : lanes_)
    for (const PowerPoint& p : lane.gpu->drain_power_points())
      if (p.t_s >= t0_s_) lane.trace.power_points.push_back(p);
}

void RunLoop::collect_steps() {
  auto steps = workload_.poll_steps();  // empty vectors do not allocate
  for (const Step& s : steps) {
    for (Lane& lane : lanes_) lane.trace.steps.push_back(s);
    if (o_.on_step) o_.on_step(s);
  }
}

Trace run(Gpu& gpu, Workload& workload, const RunOptions& options, Clock& clock, RunStats* stats) {
  RunLoop loop(gpu, workload, options, clock);
  loop.start();
  loop.run_until(nullptr);
  return loop.finish(stats);
}

std::vector<Trace> run(const std::vector<Gpu*>& gpus, Workload& workload, const RunOptions& options,
                       Clock& clock, RunStats* stats) {
  RunLoop loop(gpus, workload, options, clock);
  loop.start();
  loop.run_until(nullptr);
  return loop.finish_all(stats);
}

}  // namespace regime
