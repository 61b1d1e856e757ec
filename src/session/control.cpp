#include "session/control.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <set>

#include "act/guard_set.hpp"
#include "act/power_limit_guard.hpp"
#include "analysis/data_parallel.hpp"
#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "common/utc_time.hpp"
#include "common/version.hpp"
#include "session/job_devices.hpp"
#include "store/run_store.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace {

constexpr double kDefaultProbe_s = 60;

void validate(const ControlRequest& r) {
  session::validate(r.workload,
                    "regime control --device nvml:0 --actuate --policy regime-gated -- python3 "
                    "train.py");
  validate_run_length(r.seconds, r.sample_ms, r.warmup_s);
}

// The card's thermal time constant from data/gpus, when Regime knows the model.
std::optional<double> time_constant_s(const GpuInfo& info) {
  try {
    return twin::load_gpu_spec(info.name).thermal_time_constant_s;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// regime-gated's own keys taken out; the rest configure the inner controller (the first policy
// of the table unless inner= names another).
control::PolicySpec inner_spec(const control::PolicySpec& gated, double& probe_s) {
  control::PolicySpec inner{control::controller_policies().front().name, gated.params};
  auto in = inner.params.find("inner");
  if (in != inner.params.end()) {
    if (!control::find_policy(in->second))
      throw Error(
          ErrorKind::InvalidArgument,
          fmt::format("--policy regime-gated: inner='{}': {} {}", in->second,
                      control::controller_policies().size() == 1 ? "the only inner controller is"
                                                                 : "the inner controllers are",
                      control::policy_names(", ")));
    inner.name = in->second;
    inner.params.erase(in);
  }
  probe_s = control::number_param(gated, "probe_s").value_or(kDefaultProbe_s);
  inner.params.erase("probe_s");
  return inner;
}

MeasureOptions measure_options(const ControlRequest& r) {
  MeasureOptions mo;
  if (r.warmup_s) {
    mo.detect_steady_state = false;
    mo.warmup_s = *r.warmup_s;
  }
  return mo;
}

}  // namespace

namespace {

double sq(double x) { return x * x; }

// Adjacent pairs of a sorted list of (value, weight) merged into their weighted mean: half the
// length, the same total weight, the order kept.
std::vector<std::pair<double, double>> halve(const std::vector<std::pair<double, double>>& w) {
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i + 1 < w.size(); i += 2) {
    const double weight = w[i].second + w[i + 1].second;
    out.emplace_back((w[i].first * w[i].second + w[i + 1].first * w[i + 1].second) / weight,
                     weight);
  }
  if (w.size() % 2 == 1) out.push_back(w.back());
  return out;
}

// At most `n` evenly spaced quantiles of a sorted list of (value, weight).
std::vector<double> quantiles(const std::vector<std::pair<double, double>>& w, size_t n) {
  double total = 0;
  for (const auto& p : w) total += p.second;
  n = std::min(n, static_cast<size_t>(std::llround(total)));
  std::vector<double> out;
  double below = 0;
  size_t j = 0;
  for (size_t i = 0; i < n && !w.empty(); ++i) {
    const double target = (static_cast<double>(i) + 0.5) / static_cast<double>(n) * total;
    while (j + 1 < w.size() && below + w[j].second < target) below += w[j++].second;
    out.push_back(w[j].first);
  }
  return out;
}

}  // namespace

void SegmentedMeasurement::add(const Measurement& m) {
  if (!m.per_second && m.steps > 0)
    steps_.add(m, m.steps);
  else
    seconds_.add(m, std::max(0.0, m.window_end_s - m.window_start_s));
}

Measurement SegmentedMeasurement::result() const {
  if (segments() == 0) throw Error(ErrorKind::Internal, "segmented measurement: no segment");
  return steps_.count > 0 ? steps_.result() : seconds_.result();
}

void SegmentedMeasurement::Fold::add(const Measurement& m, double w) {
  if (count++ == 0) first = m;
  end_s = m.window_end_s;
  const double d = std::max(0.0, m.window_end_s - m.window_start_s);
  energy_J += m.energy_J;
  seconds += d;
  weight += w;
  steps += m.steps;
  samples += m.samples;
  source = std::max(source, m.energy_source);  // the least direct source any segment used
  time_sum += w * m.time_per_step_s;
  time_lo2 += sq(w * (m.time_per_step_s - m.time_per_step_ci_s.first));
  time_hi2 += sq(w * (m.time_per_step_ci_s.second - m.time_per_step_s));
  energy_lo2 += sq(w * (m.energy_per_step_J - m.energy_per_step_ci_J.first));
  energy_hi2 += sq(w * (m.energy_per_step_ci_J.second - m.energy_per_step_J));
  p95_W.add(m.p95_power_W, d);
  temp_C.add(m.mean_temp_C, d);
  sm_MHz.add(m.mean_sm_MHz, d);
  p05_sm_MHz.add(m.p05_sm_MHz, d);
  util_pct.add(m.mean_util_pct, d);
  limit_W.add(m.mean_limit_W, d);
  gap.add(m.step_gap_fraction, d);
  auto larger = [](std::optional<double>& into, const std::optional<double>& v) {
    if (v) into = std::max(into.value_or(*v), *v);
  };
  larger(max_temp_C, m.max_temp_C);
  larger(max_sm_MHz, m.max_sm_MHz_seen);
  reasons_known = reasons_known || m.reasons_known;
  for (const auto& [bit, fraction] : m.reason_fraction) reason_seconds[bit] += fraction * d;
  // Thinned alike, every kept window stands for as many: the quantiles stay unbiased.
  // Merged as weighted points and halved when too many: every window keeps its weight.
  std::vector<std::pair<double, double>> incoming, merged;
  for (double v : m.window_power_W) incoming.emplace_back(v, 1.0);
  std::merge(window_power_W.begin(), window_power_W.end(), incoming.begin(), incoming.end(),
             std::back_inserter(merged));
  window_power_W = std::move(merged);
  while (window_power_W.size() > kMaxPowerWindows) window_power_W = halve(window_power_W);
}

Measurement SegmentedMeasurement::Fold::result() const {
  Measurement out = first;
  out.window_end_s = end_s;
  out.energy_J = energy_J;
  out.steps = steps;
  out.samples = samples;
  out.energy_source = source;
  out.avg_power_W = seconds > 0 ? energy_J / seconds : 0;
  if (weight > 0) {
    // With steps: energy over steps; without: over seconds (time per step stays 1).
    out.energy_per_step_J = energy_J / weight;
    out.energy_per_step_ci_J = {out.energy_per_step_J - std::sqrt(energy_lo2) / weight,
                                out.energy_per_step_J + std::sqrt(energy_hi2) / weight};
    out.time_per_step_s = time_sum / weight;
    out.time_per_step_ci_s = {out.time_per_step_s - std::sqrt(time_lo2) / weight,
                              out.time_per_step_s + std::sqrt(time_hi2) / weight};
  }
  out.p95_power_W = p95_W.mean().value_or(out.p95_power_W);
  out.mean_temp_C = temp_C.mean();
  out.max_temp_C = max_temp_C;
  out.mean_sm_MHz = sm_MHz.mean();
  out.p05_sm_MHz = p05_sm_MHz.mean();
  out.max_sm_MHz_seen = max_sm_MHz;
  out.mean_util_pct = util_pct.mean();
  out.mean_limit_W = limit_W.mean();
  out.step_gap_fraction = gap.mean();
  out.reasons_known = reasons_known;
  out.reason_fraction.clear();
  if (seconds > 0)
    for (const auto& [bit, s] : reason_seconds) out.reason_fraction[bit] = s / seconds;
  out.window_power_W = quantiles(window_power_W, kMaxPowerWindows);
  if (count > 1)
    out.steady_state_rule +=
        fmt::format("; then {} more segment(s) measured as the run went, detection off", count - 1);
  return out;
}

std::string gate_reason(const RegimeReport& report, const GpuInfo& info) {
  switch (report.regime) {
    case Regime::ThermalBound:
      if (report.measurement.avg_power_W < info.min_limit_W)
        return fmt::format(
            "thermal-bound, but the card already draws {:.1f} W, under the lowest limit {:.0f} "
            "W: no limit the controller may set would bind; heat is a matter of cooling here",
            report.measurement.avg_power_W, info.min_limit_W);
      return "";
    case Regime::CapBound:
      return "cap-bound: the firmware already holds power at the limit; temperature control "
             "cannot lower energy per step";
    case Regime::Headroom:
      return "headroom: the GPU runs at full clocks below its limit and is not throttled by "
             "heat; temperature control has nothing to act on";
    case Regime::Underutilized:
      return "underutilized: the GPU waits most of the time; the power limit barely matters";
    case Regime::Idle:
      return "idle: no work ran on the GPU";
  }
  return "unknown regime";
}

std::string dry_run_reason(const ControlRequest& r, const ActuationPolicy& policy, bool physical) {
  std::vector<std::string> why;
  if (r.dry_run) why.push_back("--dry-run");
  if (policy.read_only) why.push_back("REGIME_READ_ONLY is set: nothing may be changed");
  if (physical && !r.actuate)
    why.push_back(
        "this is a real GPU and --actuate was not given: add --actuate to let the controller "
        "act");
  std::string text;
  for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
  return text;
}

namespace {

// Refuses what a dry run cannot do: an evaluation changes the limit in its controlled windows.
void refuse_dry_evaluation(const ControlReport& rep, const ActuationPolicy& policy) {
  const std::string msg = fmt::format(
      "--evaluate compares windows with and without the controller, so it must change the power "
      "limit, and this run may not ({}); drop --evaluate for a dry run that logs what the "
      "controller would set",
      rep.dry_run_why);
  throw Error(policy.read_only                             ? ErrorKind::ReadOnly
              : rep.dry_run_why.rfind("--dry-run", 0) == 0 ? ErrorKind::InvalidArgument
                                                           : ErrorKind::ActuationRefused,
              msg);
}

constexpr double kSettleTimeConstants = 3;  // 95% of a first-order step response

// How long one GPU's die takes to settle at a new limit: kSettleTimeConstants thermal time
// constants, the controller's dwell where the card's constant is unknown.
double settle_seconds(std::optional<double> tau_s, double dwell_s) {
  return kSettleTimeConstants * tau_s.value_or(dwell_s);
}

// An evaluation's length: the probe, then a lead-in and `windows` windows, each settling and then
// measured as long again.
double evaluation_seconds(double probe_s, int windows, double settle_s) {
  return probe_s + (windows + 1) * 2 * settle_s;
}

// The level of each arm, and the changes, fitted over the windows (analysis/interleaved.hpp).
void judge_windows(Evaluation& ev) {
  std::vector<ArmWindow> energy, time;
  for (const auto& w : ev.windows) {
    const Measurement& m = w.measurement;
    const double mid = (w.t0_s + w.t1_s) / 2;
    energy.push_back({w.controlled, mid, m.energy_per_step_J});
    time.push_back({w.controlled, mid, m.time_per_step_s});
    (w.controlled ? ev.controlled : ev.baseline).steps += m.steps;
  }
  const InterleavedComparison e = compare_interleaved(energy);
  const InterleavedComparison t = compare_interleaved(time);
  auto arm = [](ArmFigures& a, const ArmLevel& el, const ArmLevel& tl) {
    a.energy_per_step_J = el.value;
    a.energy_per_step_ci_J = el.ci;
    a.time_per_step_s = tl.value;
    a.time_per_step_ci_s = tl.ci;
    a.windows = el.windows;
  };
  arm(ev.baseline, e.baseline, t.baseline);
  arm(ev.controlled, e.treated, t.treated);
  ev.energy_change_pct = e.change_pct;
  ev.energy_change_ci_pct = e.change_ci_pct;
  ev.time_change_pct = t.change_pct;
  ev.time_change_ci_pct = t.change_ci_pct;
  ev.dof = e.dof;
  ev.verdict = judge(ev.energy_change_ci_pct, ev.time_change_ci_pct, ev.rule);
}

// A lead-in window of control, not measured, lets the controllers find their limits; then
// A B A B ... A until end_s: baseline windows at the original limits, controlled ones with each
// controller resumed at the limit it last set. Returns [start, end] of each window, run clock;
// `end` is how the last one ended.
std::vector<std::pair<double, double>> run_windows(RunLoop& loop, control::ControlLoop& cl,
                                                   Workload& work, double window_s, int windows,
                                                   double end_s, RunEnd& end) {
  if (cl.run_until(loop.now_s() + window_s) != RunEnd::StopRequested)
    throw WorkloadFailed(
        "the workload ended in the lead-in of the evaluation; --evaluate needs a workload that "
        "runs for --seconds",
        work.exit_status());
  std::vector<std::pair<double, double>> spans;
  const double start = loop.now_s();
  for (int i = 0; i < windows; ++i) {
    const double w0 = loop.now_s();
    const double w1 = i + 1 == windows ? end_s : start + (i + 1) * window_s;
    if (i % 2 == 0) {
      cl.step_aside();
      end = loop.run_until([&](const Trace&, double now) { return now >= w1; });
    } else {
      cl.resume();
      end = cl.run_until(w1);
    }
    spans.emplace_back(w0, loop.now_s());
    if (end != RunEnd::StopRequested && i + 1 < windows)
      throw WorkloadFailed(fmt::format("the workload ended in window {} of {} of the evaluation; "
                                       "--evaluate needs a workload that runs for --seconds",
                                       i + 1, windows),
                           work.exit_status());
  }
  return spans;
}

// Each window's figures over its measured part (after settle_s), times from the trace's start.
std::vector<EvaluationWindow> measure_windows(const Trace& trace,
                                              const std::vector<std::pair<double, double>>& spans,
                                              double settle_s) {
  const double origin = trace.samples.empty() ? 0 : trace.samples.front().t_s;
  MeasureOptions mo;
  mo.detect_steady_state = false;  // the settling time is dropped instead
  std::vector<EvaluationWindow> out;
  for (size_t i = 0; i < spans.size(); ++i) {
    EvaluationWindow w;
    w.controlled = i % 2 == 1;
    w.t0_s = spans[i].first + settle_s - origin;
    w.t1_s = spans[i].second - origin;
    w.measurement = measure_window(trace, spans[i].first + settle_s, spans[i].second, mo);
    if (w.measurement.steps == 0 && !w.measurement.per_second)
      throw WorkloadFailed(fmt::format("window {} ({:.0f}-{:.0f} s) of the evaluation holds no "
                                       "whole step: give longer windows (--seconds)",
                                       i + 1, w.t0_s, w.t1_s),
                           std::nullopt);
    out.push_back(w);
  }
  return out;
}

}  // namespace

namespace {

// A long run without --evaluate is measured in segments as it goes: the first long enough for the
// warm-up to be found in it, the rest shorter, each measured at its end and then forgotten.
constexpr double kFirstSegment_s = 180;
constexpr double kSegment_s = 120;

struct SegmentPlan {
  bool on = false;
  double from_s = 0;  // start of the segment being recorded, run clock
  double first_s = 0;
  double end_s = 0;  // the run's planned end
  MeasureOptions first, later;
};

SegmentPlan segment_plan(const ControlRequest& r, double t0_s) {
  SegmentPlan p;
  p.first_s = kFirstSegment_s + r.warmup_s.value_or(0);
  p.on = !r.evaluate && r.seconds > p.first_s + kSegment_s / 2;
  p.from_s = t0_s;
  p.end_s = t0_s + r.seconds;
  p.first = measure_options(r);
  p.later.detect_steady_state = false;  // found in the first segment
  return p;
}

// Runs the loop (under control when `cl` is given) to its end. When the plan is on, each GPU's
// segment is measured at each cut and forgotten; the last segment is left to the caller.
RunEnd run_to_end(RunLoop& loop, control::ControlLoop* cl, SegmentPlan& plan,
                  std::vector<SegmentedMeasurement>& segments) {
  auto advance = [&](double until_s) {
    if (cl) return cl->run_until(until_s);
    return loop.run_until([&](const Trace&, double now) { return now >= until_s; });
  };
  if (plan.on) {
    // The last segment is at least half a segment long.
    for (double cut = plan.from_s + plan.first_s; cut + kSegment_s / 2 < plan.end_s;
         cut += kSegment_s) {
      const RunEnd end = advance(cut);
      if (end != RunEnd::StopRequested) return end;
      const double now = loop.now_s();
      const MeasureOptions& mo = segments.front().segments() == 0 ? plan.first : plan.later;
      for (size_t i = 0; i < segments.size(); ++i)
        segments[i].add(measure_window(loop.trace(i), plan.from_s, now, mo));
      loop.forget_before(now);
      plan.from_s = now;
    }
  }
  return advance(std::numeric_limits<double>::infinity());
}

// One GPU of the run: its report (filled as the run goes), its controller and its guard's slot.
struct Lane {
  ControlReport rep;
  std::optional<double> tau_s;
  control::PolicySetup controller;
};

// The GPUs --device names: one (any device, its own clock) or a job's (real GPUs, one clock).
std::vector<Gpu*> control_gpus(std::vector<Target>& targets) {
  if (targets.size() == 1) return {&targets.front().gpu()};
  return job_gpus(targets);
}

// The job's summary of its GPUs' reasons: "nvml:0: ...; nvml:1: ...".
std::string job_reason(const std::vector<Lane>& lanes) {
  std::string out;
  for (const Lane& l : lanes) out += (out.empty() ? "" : "; ") + l.rep.device + ": " + l.rep.reason;
  return out;
}

void keep_control_run(ControlReport& rep, const ControlRequest& r) {
  ControlRunRecord rec;
  rec.started_at_utc = utc_now_iso();
  rec.device = rep.device;
  rec.gpu_name =
      rep.gpus.size() > 1 ? fmt::format("{}x {}", rep.gpus.size(), rep.info.name) : rep.info.name;
  rec.gpu_uuid = rep.gpus.size() > 1 ? "" : rep.info.uuid;
  rec.workload = rep.workload;
  rec.policy = rep.policy;
  rec.provenance.driver_version = rep.simulated ? "sim" : rep.info.driver_version;
  rec.provenance.regime_version = regime_version();
  rec.provenance.options = {{"seconds", r.seconds},   {"sample_ms", r.sample_ms},
                            {"evaluate", r.evaluate}, {"windows", r.windows},
                            {"dry_run", rep.dry_run}, {"actuate", r.actuate},
                            {"job_devices", r.device}};
  rec.report = to_json(rep);
  RunStore store(RunStore::path_or_default(r.db));
  rep.stored_id = store.insert_control_run(rec);
}

}  // namespace

EvaluationLength evaluation_length(const ControlRequest& r) {
  control::PolicySpec spec = control::parse_policy(r.policy);
  const bool gated = spec.name == "regime-gated";
  std::vector<Target> targets = open_targets(resolve_job_device(r.device, r.workload));
  EvaluationLength out;
  double probe_s = 0;
  for (Gpu* g : control_gpus(targets)) {
    const GpuInfo info = g->info();
    const std::optional<double> tau_s = time_constant_s(info);
    const control::PolicySetup p =
        control::make_policy(gated ? inner_spec(spec, probe_s) : spec, info, tau_s);
    out.settle_s = std::max(out.settle_s, settle_seconds(tau_s, p.dwell_s));
  }
  out.min_s = evaluation_seconds(probe_s, r.windows, out.settle_s);
  return out;
}

ControlReport run_control(const ControlRequest& r) {
  validate(r);
  if (r.evaluate && !(r.windows >= 5 && r.windows % 2 == 1 && r.windows <= 101))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--windows must be odd and in [5, 101] (A B A B A: the baseline first "
                            "and last), got {}",
                            r.windows));
  control::PolicySpec spec = control::parse_policy(r.policy);
  if (spec.name != "regime-gated" && !control::find_policy(spec.name))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy '{}': unknown policy (expected {}[:k=v,...] or "
                            "regime-gated[:inner={},probe_s=S,k=v,...])",
                            spec.name, control::policy_names("|"), control::policy_names("|")));
  const bool gated = spec.name == "regime-gated";
  std::vector<Target> targets = open_targets(resolve_job_device(r.device, r.workload));
  std::vector<Gpu*> gpus = control_gpus(targets);
  const bool job = gpus.size() > 1;
  ActuationPolicy policy = ActuationPolicy::from_flags(r.actuate);

  // Each GPU's own parameters, dry-run reason and report; the job's report gathers them.
  std::vector<Lane> lanes(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    ControlReport& g = lanes[i].rep;
    g.device = targets[i].uri();
    g.workload = r.workload.display_name();
    g.policy = r.policy;
    g.simulated = targets[i].simulated();
    g.evaluate = r.evaluate;
    g.info = gpus[i]->info();
    g.limit_before_W = g.info.current_limit_W;
    lanes[i].tau_s = time_constant_s(g.info);
    const control::PolicySpec inner = gated ? inner_spec(spec, g.probe_s) : spec;
    lanes[i].controller = control::make_policy(inner, g.info, lanes[i].tau_s);
    g.controller = inner.name;
    g.controller_params = lanes[i].controller.params;
    g.controller_text = lanes[i].controller.params_text;
    g.dry_run_why = dry_run_reason(r, policy, gpus[i]->is_physical());
    g.dry_run = !g.dry_run_why.empty();
  }
  ControlReport rep = lanes.front().rep;
  if (job) rep.device = r.device;
  if (gated && !(rep.probe_s >= 10 && rep.probe_s < r.seconds))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy regime-gated: probe_s must be in [10, --seconds) = [10, "
                            "{}) s, got {}",
                            r.seconds, rep.probe_s));
  // An evaluation's windows: each long enough for the slowest die to settle at the new limit and
  // then be measured for as long again.
  double settle_s = 0;
  for (const Lane& l : lanes)
    settle_s = std::max(settle_s, settle_seconds(l.tau_s, l.controller.dwell_s));
  const double probe_s = gated ? rep.probe_s : 0;
  const double control_s = r.seconds - probe_s;
  if (r.evaluate && r.seconds < evaluation_seconds(probe_s, r.windows, settle_s))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--evaluate: a lead-in and {} windows of {:.0f} s are too short for "
                            "this card: each needs {:.0f} s to settle ({:g} thermal time "
                            "constants) and as long again to measure; give --seconds {:.0f} or "
                            "more",
                            r.windows, control_s / (r.windows + 1), settle_s, kSettleTimeConstants,
                            std::ceil(evaluation_seconds(probe_s, r.windows, settle_s))));
  // thermal acts from the start: refuse what it may not do before any work runs.
  if (!gated && r.evaluate && rep.dry_run) refuse_dry_evaluation(rep, policy);
  if (!gated && !rep.dry_run)
    for (size_t i = 0; i < gpus.size(); ++i)
      check_actuation(policy, lanes[i].rep.info, gpus[i]->is_physical(),
                      lanes[i].rep.info.current_limit_W);

  WorkloadPtr work = targets.front().make_workload(r.workload);
  // What the command uses against what is measured: by CUDA_VISIBLE_DEVICES now, and by the
  // processes NVML lists while it runs.
  std::vector<GpuInfo> infos;
  for (const Lane& l : lanes) infos.push_back(l.rep.info);
  if (!rep.simulated) {
    rep.usage =
        job ? job_devices_json(infos, r.workload) : one_gpu_devices_json(infos.front(), r.workload);
    if (rep.usage.is_object())
      for (const auto& w : rep.usage.value("warnings", std::vector<std::string>{}))
        rep.warnings.push_back(w);
  }
  JobProcessWatch watch(infos, r.workload);
  PowerLimitGuardSet guards(gpus, policy);
  std::vector<Trace> traces;
  RunStats stats;
  std::vector<std::pair<double, double>> windows;  // [start, end] of each, run clock
  SegmentPlan plan;
  std::vector<SegmentedMeasurement> segments(lanes.size());
  try {
    RunOptions ro;
    ro.duration_s = r.seconds;
    ro.sample_period_s = r.sample_ms / 1000.0;
    size_t samples = 0;  // one per GPU a tick
    ro.on_sample = [&](const Sample& s) {
      if (++samples % gpus.size() == 0) watch.maybe_check(*work, s.t_s);
    };
    RunLoop loop(gpus, *work, ro, targets.front().clock());
    loop.start();
    const double t0 = loop.now_s();
    plan = segment_plan(r, t0);
    for (Lane& l : lanes) {
      l.rep.engaged = !gated;
      l.rep.reason = gated ? "" : l.rep.controller + ": controlling from the start";
    }
    if (gated) {
      RunEnd end =
          loop.run_until([&](const Trace&, double now) { return now >= t0 + rep.probe_s; });
      if (end != RunEnd::StopRequested)
        throw WorkloadFailed(fmt::format("the workload ended during the {:.0f} s probe of "
                                         "regime-gated",
                                         rep.probe_s),
                             work->exit_status());
      // Each GPU is gated on its own classification: in a job a hot GPU may be controlled while
      // its cooler neighbour is left alone. The probe finds its own steady window: --warmup-s
      // is for the whole run.
      for (size_t i = 0; i < lanes.size(); ++i) {
        ControlReport& g = lanes[i].rep;
        g.probe = classify(measure_window(loop.trace(i), t0, loop.now_s()), g.info);
        g.reason = gate_reason(*g.probe, g.info);
        g.engaged = g.reason.empty();
        if (!g.engaged) continue;
        g.reason = fmt::format(
            "thermal-bound (confidence {:.2f}): heat limits the clocks; engaging {} control",
            g.probe->confidence, g.controller);
        if (r.evaluate && g.dry_run) refuse_dry_evaluation(g, policy);
        if (!g.dry_run)
          check_actuation(policy, g.info, gpus[i]->is_physical(), g.info.current_limit_W);
      }
    }
    std::vector<control::ControlLane> control_lanes;
    for (size_t i = 0; i < lanes.size(); ++i) {
      ControlReport& g = lanes[i].rep;
      if (!g.engaged) continue;
      control_lanes.push_back({i, &guards.at(i), lanes[i].controller.controller.get(),
                               lanes[i].controller.bounds, g.info.current_limit_W});
    }
    RunEnd end = RunEnd::Duration;
    std::optional<control::ControlLoop> cl;
    if (!control_lanes.empty()) cl.emplace(loop, control_lanes, rep.dry_run);
    if (cl && r.evaluate) {
      const double window_s = (t0 + r.seconds - loop.now_s()) / (r.windows + 1);
      windows = run_windows(loop, *cl, *work, window_s, r.windows, t0 + r.seconds, end);
      Evaluation ev;
      ev.window_s = window_s;
      ev.lead_in_s = window_s;
      ev.settle_s = settle_s;
      rep.evaluation = ev;
      for (Lane& l : lanes)
        if (l.rep.engaged) l.rep.evaluation = ev;
    } else {
      end = run_to_end(loop, cl ? &*cl : nullptr, plan, segments);
    }
    if (cl)
      for (size_t k = 0; k < control_lanes.size(); ++k) {
        ControlReport& g = lanes[control_lanes[k].gpu].rep;
        g.actions = cl->actions(k);
        g.decisions = cl->decisions(k);
      }
    traces = loop.finish_all(&stats);
    if (plan.on)
      for (size_t i = 0; i < lanes.size(); ++i) {
        const bool first = segments[i].segments() == 0;
        try {
          segments[i].add(measure_window(traces[i], plan.from_s, stats.t_end_s,
                                         first ? plan.first : plan.later));
        } catch (const Error&) {
          if (first) throw;  // a tail too short to measure adds nothing to what was measured
        }
      }
    // A command that ends by itself before --seconds is fine when it succeeded: the run is
    // judged on what ran. A failing one passes its status on.
    std::optional<int> status = work->exit_status();
    if (end == RunEnd::WorkloadFinished && status && *status != 0)
      throw WorkloadFailed(fmt::format("the workload failed with exit status {} after {:.1f} s",
                                       *status, stats.t_end_s - stats.t_start_s),
                           status);
  } catch (const WorkloadFailed& e) {
    guards.restore();
    throw WorkloadFailed(std::string(e.what()) + "; the original power limit was restored",
                         e.exit_status);
  }
  guards.restore();
  add_process_findings(watch, rep.usage, rep.warnings);
  std::vector<Measurement> per_gpu;
  std::vector<std::vector<EvaluationWindow>> per_gpu_windows;
  for (size_t i = 0; i < lanes.size(); ++i) {
    ControlReport& g = lanes[i].rep;
    g.limit_after_W = gpus[i]->info().current_limit_W;
    g.duration_s = stats.t_end_s - stats.t_start_s;
    g.origin_s = stats.t_start_s;
    g.measurement = plan.on ? segments[i].result() : measure(traces[i], measure_options(r));
    per_gpu.push_back(g.measurement);
    if (rep.evaluation) per_gpu_windows.push_back(measure_windows(traces[i], windows, settle_s));
    if (g.evaluation) {
      g.evaluation->windows = per_gpu_windows.back();
      judge_windows(*g.evaluation);
    }
  }
  if (!job) {
    // One GPU: its own report is the run's, with what the command was seen to use.
    nlohmann::json usage = rep.usage;
    std::vector<std::string> warnings = rep.warnings;
    rep = lanes.front().rep;
    rep.usage = usage;
    rep.warnings = warnings;
  } else {
    rep.gpus.clear();
    for (Lane& l : lanes) rep.gpus.push_back(l.rep);
    rep.engaged =
        std::any_of(lanes.begin(), lanes.end(), [](const Lane& l) { return l.rep.engaged; });
    rep.reason = job_reason(lanes);
    rep.limit_after_W = lanes.front().rep.limit_after_W;
    rep.duration_s = stats.t_end_s - stats.t_start_s;
    rep.origin_s = lanes.front().rep.origin_s;
    rep.measurement = combine_data_parallel(per_gpu);
    rep.spread = gpu_spread(per_gpu);
    std::vector<Regime> regimes;
    for (const Lane& l : lanes)
      if (l.rep.probe) regimes.push_back(l.rep.probe->regime);
    if (!regimes.empty()) rep.job_regime = job_regime(regimes);
    if (rep.evaluation) {
      // The job's windows: each GPU's over the same stretch, energy summed.
      Evaluation& ev = *rep.evaluation;
      ev.windows.clear();
      for (size_t w = 0; w < windows.size(); ++w) {
        EvaluationWindow jw = per_gpu_windows.front()[w];
        std::vector<Measurement> ms;
        for (const auto& g : per_gpu_windows) ms.push_back(g[w].measurement);
        jw.measurement = combine_data_parallel(ms);
        ev.windows.push_back(jw);
      }
      judge_windows(ev);
    }
  }
  keep_control_run(rep, r);
  return rep;
}

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json pair(const Interval& i) { return {i.first, i.second}; }

nlohmann::json arm_json(double e, const Interval& e_ci, double t, const Interval& t_ci) {
  return {{"energy_per_step_J", e},
          {"energy_per_step_ci_J", pair(e_ci)},
          {"time_per_step_s", t},
          {"time_per_step_ci_s", pair(t_ci)}};
}

}  // namespace

namespace {

// One GPU's run, or the job's figures, without the job's own extensions.
nlohmann::json run_json(const ControlReport& r) {
  const Measurement& m = r.measurement;
  nlohmann::json actions = nlohmann::json::array();
  for (const auto& a : r.actions)
    actions.push_back({{"t_s", a.t_s},
                       {"temp_C", opt(a.temp_C)},
                       {"power_W", opt(a.power_W)},
                       {"old_limit_W", a.old_limit_W},
                       {"limit_W", a.new_limit_W},
                       {"applied", a.applied},
                       {"why", a.why}});
  nlohmann::json decisions = nlohmann::json::array();
  for (const auto& a : r.decisions)
    decisions.push_back(
        {{"t_s", a.t_s},
         {"temp_C", opt(a.temp_C)},
         {"power_W", opt(a.power_W)},
         {"limit_W", a.old_limit_W},
         {"would_set_W",
          a.new_limit_W == a.old_limit_W ? nlohmann::json(nullptr) : nlohmann::json(a.new_limit_W)},
         {"why", a.why}});
  nlohmann::json j = {
      {"device", r.device},
      {"gpu", r.info.name},
      {"workload", r.workload},
      {"policy", r.policy},
      {"engaged", r.engaged},
      {"reason", r.reason},
      {"dry_run", r.dry_run},
      {"dry_run_reason", r.dry_run ? nlohmann::json(r.dry_run_why) : nlohmann::json(nullptr)},
      {"probe_s", r.probe_s},
      {"regime", r.probe ? nlohmann::json(to_string(r.probe->regime)) : nullptr},
      {"probe", r.probe ? regime::to_json(*r.probe) : nlohmann::json(nullptr)},
      {r.controller, r.controller_params},
      {"actions", actions},
      {"decisions", decisions},
      {"limit_before_W", r.limit_before_W},
      {"limit_after_W", r.limit_after_W},
      {"duration_s", r.duration_s},
      {"simulated", r.simulated},
      {"measurement", regime::to_json(m)}};
  if (!r.evaluate) {
    j.update(arm_json(m.energy_per_step_J, m.energy_per_step_ci_J, m.time_per_step_s,
                      m.time_per_step_ci_s));
    return j;
  }
  if (!r.evaluation) {
    // Not engaged: the whole run is the baseline, and there is nothing to compare.
    j["baseline"] = arm_json(m.energy_per_step_J, m.energy_per_step_ci_J, m.time_per_step_s,
                             m.time_per_step_ci_s);
    for (const char* k : {"controlled", "energy_change_pct", "energy_change_ci_pct",
                          "time_change_pct", "time_change_ci_pct", "verdict", "evaluation"})
      j[k] = nullptr;
    return j;
  }
  const Evaluation& ev = *r.evaluation;
  j["baseline"] = arm_json(ev.baseline.energy_per_step_J, ev.baseline.energy_per_step_ci_J,
                           ev.baseline.time_per_step_s, ev.baseline.time_per_step_ci_s);
  j["controlled"] = arm_json(ev.controlled.energy_per_step_J, ev.controlled.energy_per_step_ci_J,
                             ev.controlled.time_per_step_s, ev.controlled.time_per_step_ci_s);
  j["energy_change_pct"] = ev.energy_change_pct;
  j["energy_change_ci_pct"] = pair(ev.energy_change_ci_pct);
  j["time_change_pct"] = ev.time_change_pct;
  j["time_change_ci_pct"] = pair(ev.time_change_ci_pct);
  j["verdict"] = to_string(ev.verdict);
  nlohmann::json ws = nlohmann::json::array();
  for (const auto& w : ev.windows) {
    const Measurement& wm = w.measurement;
    ws.push_back({{"arm", w.controlled ? "controlled" : "baseline"},
                  {"t0_s", w.t0_s},
                  {"t1_s", w.t1_s},
                  {"steps", wm.steps},
                  {"energy_per_step_J", wm.energy_per_step_J},
                  {"time_per_step_s", wm.time_per_step_s},
                  {"avg_power_W", wm.avg_power_W},
                  {"mean_temp_C", opt(wm.mean_temp_C)},
                  {"max_temp_C", opt(wm.max_temp_C)},
                  {"mean_limit_W", opt(wm.mean_limit_W)}});
  }
  j["evaluation"] = {{"windows", ws},
                     {"lead_in_s", ev.lead_in_s},
                     {"window_s", ev.window_s},
                     {"settle_s", ev.settle_s},
                     {"dof", ev.dof},
                     {"confidence", 0.95},
                     {"energy_margin_pct", ev.rule.energy_margin_pct},
                     {"time_margin_pct", ev.rule.time_margin_pct}};
  return j;
}

}  // namespace

nlohmann::json to_json(const ControlReport& r) {
  nlohmann::json j = run_json(r);
  j["stored_as"] =
      r.stored_id ? nlohmann::json(fmt::format("control:{}", *r.stored_id)) : nlohmann::json();
  j["job_devices"] = r.usage;
  j["warnings"] = r.warnings;
  if (r.gpus.empty()) return j;
  nlohmann::json gpus = nlohmann::json::array();
  for (const ControlReport& g : r.gpus) gpus.push_back(run_json(g));
  j["gpus"] = gpus;
  j["gpu"] = fmt::format("{}x {}", r.gpus.size(), r.info.name);
  j["regime"] = r.job_regime ? nlohmann::json(to_string(*r.job_regime)) : nlohmann::json();
  j["spread"] = r.spread ? regime::to_json(*r.spread) : nlohmann::json();
  return j;
}

}  // namespace regime::session
