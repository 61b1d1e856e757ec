#include "session/control/control_steps.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "analysis/data_parallel.hpp"
#include "analysis/probe_regime.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/utc_time.hpp"
#include "session/probe/probe_window.hpp"
#include "session/settings.hpp"
#include "session/site/command_gpus.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace {

constexpr double kDefaultProbe_s = 60;
constexpr double kSettleTimeConstants = 3;  // 95% of a first-order step response

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
  control::PolicySpec inner{control::controller_policies().front().name, gated.params, gated.text};
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

// How long one GPU's die takes to settle at a new limit: kSettleTimeConstants thermal time
// constants, the controller's dwell where the card's constant is unknown.
double settle_seconds(std::optional<double> tau_s, double dwell_s) {
  return kSettleTimeConstants * tau_s.value_or(dwell_s);
}

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

// thermal acts from the start: what it may not do is refused before any work runs.
void refuse_before_work(const ControlRequest& r, const ControlSetup& s) {
  const ControlReport& first = s.lanes.front().rep;
  if (r.evaluate && first.dry_run) refuse_dry_evaluation(first, s.policy);
  if (first.dry_run) return;
  for (size_t i = 0; i < s.gpus.size(); ++i)
    check_actuation(s.policy, s.lanes[i].rep.info, s.gpus[i]->is_physical(),
                    s.lanes[i].rep.info.current_limit_W);
}

}  // namespace

control::PolicySpec checked_control_policy(const ControlRequest& r, bool check_length) {
  session::validate(r.workload, kControlExample);
  if (check_length) validate_run_length(r.seconds, r.sample_ms, r.warmup_s);
  if (r.evaluate && !(r.windows >= 5 && r.windows % 2 == 1 && r.windows <= 101))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--windows must be odd and in [5, 101] (A B A B A: the baseline first "
                            "and last), got {}",
                            r.windows));
  control::PolicySpec spec = r.policy;
  if (spec.name != "regime-gated" && !control::find_policy(spec.name))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy '{}': unknown policy (expected {}[:k=v,...] or "
                            "regime-gated[:inner={},probe_s=S,k=v,...])",
                            spec.name, control::policy_names("|"), control::policy_names("|")));
  return spec;
}

std::vector<Gpu*> control_gpus(std::vector<Target>& targets) {
  if (targets.size() == 1) return {&targets.front().gpu()};
  return job_gpus(targets);
}

std::vector<ControlGpu> control_lanes(const ControlRequest& r, const control::PolicySpec& spec,
                                      const std::vector<Target>& targets,
                                      const std::vector<Gpu*>& gpus,
                                      const ActuationPolicy& policy) {
  const bool gated = spec.name == "regime-gated";
  std::vector<ControlGpu> lanes(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    ControlReport& g = lanes[i].rep;
    g.device = targets[i].uri();
    g.workload = r.workload.display_name();
    g.policy = r.policy.text;
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
  return lanes;
}

double slowest_settle_s(const std::vector<ControlGpu>& lanes) {
  double settle_s = 0;
  for (const ControlGpu& l : lanes)
    settle_s = std::max(settle_s, settle_seconds(l.tau_s, l.controller.dwell_s));
  return settle_s;
}

double evaluation_seconds(double probe_s, int windows, double settle_s) {
  return probe_s + (windows + 1) * 2 * settle_s;
}

double slowest_learn_s(const std::vector<ControlGpu>& lanes) {
  double learn_s = 0;
  for (const ControlGpu& l : lanes) learn_s = std::max(learn_s, l.controller.controller->learn_s());
  return learn_s;
}

void check_control_length(const ControlRequest& r, bool gated, double probe_s, double settle_s,
                          double learn_s) {
  if (gated && !(probe_s >= 10 && probe_s < r.seconds))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy regime-gated: probe_s must be in [10, --seconds) = [10, "
                            "{}) s, got {}",
                            r.seconds, probe_s));
  if (!gated) probe_s = 0;
  probe_s += learn_s;  // a controller that learns first does so before the windows
  if (learn_s > 0 && !(learn_s < r.seconds))
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--policy {}: it learns for {:.0f} s before it controls; give --seconds "
                    "over that",
                    r.policy.name, learn_s));
  const double control_s = r.seconds - probe_s;
  if (r.evaluate && r.seconds < evaluation_seconds(probe_s, r.windows, settle_s))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--evaluate: a lead-in and {} windows of {:.0f} s are too short for "
                            "this card: each needs {:.0f} s to settle ({:g} thermal time "
                            "constants) and as long again to measure; give --seconds {:.0f} or "
                            "more",
                            r.windows, control_s / (r.windows + 1), settle_s, kSettleTimeConstants,
                            std::ceil(evaluation_seconds(probe_s, r.windows, settle_s))));
}

EvaluationLength evaluation_length(const ControlSetup& s, int windows) {
  EvaluationLength out;
  out.settle_s = s.settle_s;
  out.min_s = evaluation_seconds(s.lanes.front().rep.probe_s + slowest_learn_s(s.lanes), windows,
                                 s.settle_s);
  return out;
}

ControlSetup open_control(ControlRequest& r, const ChooseSeconds& choose_seconds) {
  const control::PolicySpec spec = checked_control_policy(r, !choose_seconds);
  ControlSetup s;
  s.gated = spec.name == "regime-gated";
  s.targets = std::move(open_site(r.device, r.workload, kControlExample).targets);
  s.gpus = control_gpus(s.targets);
  s.policy = ActuationPolicy::from_flags(r.actuate);
  s.lanes = control_lanes(r, spec, s.targets, s.gpus, s.policy);
  s.settle_s = slowest_settle_s(s.lanes);
  if (choose_seconds) {
    r.seconds = choose_seconds(evaluation_length(s, r.windows));
    validate_run_length(r.seconds, r.sample_ms, r.warmup_s);
  }
  check_control_length(r, s.gated, s.lanes.front().rep.probe_s, s.settle_s,
                       slowest_learn_s(s.lanes));
  if (!s.gated) refuse_before_work(r, s);
  return s;
}

ControlSetup open_control(const ControlRequest& request) {
  ControlRequest r = request;
  return open_control(r, {});
}

void gate_lane(ControlReport& g, const RegimeReport& probe) {
  g.probe = probe;
  g.reason = gate_reason(probe, g.info);
  g.engaged = g.reason.empty();
  if (g.engaged)
    g.reason = fmt::format(
        "thermal-bound (confidence {:.2f}): heat limits the clocks; engaging {} control",
        probe.confidence, g.controller);
}

namespace {

// A long run without --evaluate is measured in segments as it goes: the first long enough for the
// warm-up to be found in it, the rest shorter, each measured at its end and then forgotten.
constexpr double kFirstSegment_s = 180;
constexpr double kSegment_s = 120;

}  // namespace

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

std::vector<std::filesystem::path> control_trace_files(size_t gpus) {
  static std::atomic<int> runs{0};
  const std::filesystem::path dir = state_dir() / "runs";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error(ErrorKind::Io, fmt::format("cannot make {} for the control run's trace: {}",
                                           dir.string(), ec.message()));
  std::string stamp = utc_now_iso();
  std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
  const int n = ++runs;
  std::vector<std::filesystem::path> out;
  for (size_t i = 0; i < gpus; ++i)
    out.push_back(dir / fmt::format("control-{}-{}-{}-gpu{}.trace.csv", stamp, ::getpid(), n, i));
  return out;
}

nlohmann::json control_trace_json(const std::vector<std::filesystem::path>& trace_files) {
  nlohmann::json files = nlohmann::json::array();
  for (const std::filesystem::path& f : trace_files) files.push_back(f.string());
  return {{"files", files},
          {"whole_s", kControlTraceRule.whole_s},
          {"bucket_s", kControlTraceRule.bucket_s}};
}

WindowFigures window_figures(const std::string& kind, const Measurement& m) {
  WindowFigures w;
  w.kind = kind;
  w.t0_s = m.window_start_s;
  w.t1_s = m.window_end_s;
  w.steps = m.steps;
  w.per_second = m.per_second;
  w.energy_per_step_J = m.energy_per_step_J;
  w.energy_lo_J = m.energy_per_step_ci_J.first;
  w.energy_hi_J = m.energy_per_step_ci_J.second;
  w.time_per_step_s = m.time_per_step_s;
  w.time_lo_s = m.time_per_step_ci_s.first;
  w.time_hi_s = m.time_per_step_ci_s.second;
  w.avg_power_W = m.avg_power_W;
  w.mean_temp_C = m.mean_temp_C;
  w.mean_limit_W = m.mean_limit_W;
  return w;
}

namespace {

using TraceWriters = std::vector<std::unique_ptr<ChunkedTraceWriter>>;

// Runs the loop (under control when `cl` is given) to its end. When the plan is on, each GPU's
// segment is measured at each cut, written to its trace on disk with its figures, and forgotten;
// the last segment is left to the caller.
RunEnd run_to_end(RunLoop& loop, control::ControlLoop* cl, SegmentPlan& plan,
                  std::vector<SegmentedMeasurement>& segments, TraceWriters& writers) {
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
      for (size_t i = 0; i < segments.size(); ++i) {
        const Measurement m = measure_window(loop.trace(i), plan.from_s, now, mo);
        segments[i].add(m);
        writers[i]->write_chunk(loop.trace(i));
        writers[i]->write_figures(window_figures("segment", m));
      }
      loop.forget_before(now);
      plan.from_s = now;
    }
  }
  return advance(std::numeric_limits<double>::infinity());
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

// regime-gated: the probe at the current limits on the running workload, then each GPU gated on
// its own classification (in a job a hot GPU may be controlled while its cooler neighbour is left
// alone), and what an engaged GPU may not do refused. The probe finds its own steady window:
// --warmup-s is for the whole run.
void gate_on_probe(RunLoop& loop, double t0_s, double probe_s, const ControlRequest& r,
                   ControlSetup& s, Workload& work) {
  const RunEnd end =
      loop.run_until([&](const Trace&, double now) { return now >= t0_s + probe_s; });
  if (end != RunEnd::StopRequested)
    throw WorkloadFailed(
        fmt::format("the workload ended during the {:.0f} s probe of regime-gated", probe_s),
        work.exit_status());
  for (size_t i = 0; i < s.lanes.size(); ++i) {
    ControlReport& g = s.lanes[i].rep;
    RegimeOrWhy named =
        name_probe_regime(loop.trace(i), g.info, {}, probe_within_run(t0_s, loop.now_s()));
    if (named.report) {
      gate_lane(g, *named.report);
    } else {
      g.engaged = false;
      g.reason = "the probe names no regime (" + named.too_short + "): the controller stays out";
    }
    if (!g.engaged) continue;
    if (r.evaluate && g.dry_run) refuse_dry_evaluation(g, s.policy);
    if (!g.dry_run)
      check_actuation(s.policy, g.info, s.gpus[i]->is_physical(), g.info.current_limit_W);
  }
}

// The engaged GPUs' lanes of the control loop, each with its guard and controller.
std::vector<control::ControlLane> engaged_lanes(std::vector<ControlGpu>& lanes,
                                                PowerLimitGuardSet& guards) {
  std::vector<control::ControlLane> out;
  for (size_t i = 0; i < lanes.size(); ++i) {
    ControlReport& g = lanes[i].rep;
    if (!g.engaged) continue;
    out.push_back({i, &guards.at(i), lanes[i].controller.controller.get(),
                   lanes[i].controller.bounds, g.info.current_limit_W});
  }
  return out;
}

// A controller that learns first (phase: each phase's cap) does so on the running workload before
// any evaluation's windows; one that then stands aside is left out with its reason, and every
// learning GPU's limit is set back to where control started, so the controlled run starts from it.
// The learning's actions are kept in the lanes' reports. Returns the lanes that go on.
std::vector<control::ControlLane> learn_first(RunLoop& loop,
                                              std::unique_ptr<control::ControlLoop>& cl,
                                              std::vector<control::ControlLane> engaged,
                                              ControlSetup& s, PowerLimitGuardSet& guards,
                                              Workload& work, bool dry_run) {
  double learn_s = 0;
  for (const control::ControlLane& l : engaged)
    if (l.controller->learn_s() > 0)
      learn_s = std::max(learn_s, l.controller->learn_s() + l.controller->period_s());
  if (!(learn_s > 0)) return engaged;
  if (cl->run_until(loop.now_s() + learn_s) != RunEnd::StopRequested)
    throw WorkloadFailed(
        fmt::format("the workload ended while the controller learned ({:.0f} s)", learn_s),
        work.exit_status());
  std::vector<control::ControlLane> kept;
  for (size_t k = 0; k < engaged.size(); ++k) {
    const control::ControlLane& l = engaged[k];
    ControlReport& g = s.lanes[l.gpu].rep;
    g.actions = cl->actions(k);
    g.decisions = cl->decisions(k);
    if (!dry_run) guards.at(l.gpu).set(l.start_limit_W);
    if (const auto why = l.controller->stands_aside()) {
      g.engaged = false;
      g.reason = *why;
    } else {
      g.reason = l.controller->name() + ": " + l.controller->learned();
      kept.push_back(l);
    }
  }
  cl.reset();
  if (!kept.empty()) cl = std::make_unique<control::ControlLoop>(loop, kept, dry_run);
  return kept;
}

// --evaluate: the interleaved windows to the run's planned end, and the evaluation's lengths in
// the run's report and each engaged GPU's.
std::vector<std::pair<double, double>> run_evaluation(RunLoop& loop, control::ControlLoop& cl,
                                                      Workload& work, const ControlRequest& r,
                                                      double t0_s, ControlSetup& s,
                                                      ControlReport& rep, RunEnd& end) {
  const double window_s = (t0_s + r.seconds - loop.now_s()) / (r.windows + 1);
  std::vector<std::pair<double, double>> spans =
      run_windows(loop, cl, work, window_s, r.windows, t0_s + r.seconds, end);
  Evaluation ev;
  ev.window_s = window_s;
  ev.lead_in_s = window_s;
  ev.settle_s = s.settle_s;
  rep.evaluation = ev;
  for (ControlGpu& l : s.lanes)
    if (l.rep.engaged) l.rep.evaluation = ev;
  return spans;
}

// The last segment of a run measured in segments: a tail too short to measure adds nothing to
// what was measured before it.
void measure_last_segment(RecordedControlRun& run) {
  for (size_t i = 0; i < run.segments.size(); ++i) {
    const bool first = run.segments[i].segments() == 0;
    try {
      const Measurement m = measure_window(run.traces[i], run.plan.from_s, run.stats.t_end_s,
                                           first ? run.plan.first : run.plan.later);
      run.segments[i].add(m);
      run.writers[i]->write_figures(window_figures("segment", m));
    } catch (const Error&) {
      if (first) throw;
    }
  }
}

// A command that ends by itself before --seconds is fine when it succeeded: the run is judged on
// what ran. A failing one passes its status on.
void check_workload_end(RunEnd end, Workload& work, const RunStats& stats) {
  std::optional<int> status = work.exit_status();
  if (end == RunEnd::WorkloadFinished && status && *status != 0)
    throw WorkloadFailed(fmt::format("the workload failed with exit status {} after {:.1f} s",
                                     *status, stats.t_end_s - stats.t_start_s),
                         status);
}

}  // namespace

RecordedControlRun record_control_run(const ControlRequest& r, ControlSetup& s, Workload& work,
                                      ControlReport& rep, PowerLimitGuardSet& guards,
                                      JobProcessWatch& watch) {
  RecordedControlRun out;
  out.segments.resize(s.lanes.size());
  RunOptions ro;
  ro.duration_s = r.seconds;
  ro.sample_period_s = r.sample_ms / 1000.0;
  size_t samples = 0;  // one per GPU a tick
  ro.on_sample = [&](const Sample& sample) {
    if (++samples % s.gpus.size() == 0) watch.maybe_check(work, sample.t_s);
  };
  RunLoop loop(s.gpus, work, ro, s.targets.front().clock());
  loop.start();
  const double t0 = loop.now_s();
  out.plan = segment_plan(r, t0);
  out.trace_files = control_trace_files(s.gpus.size());
  for (const std::filesystem::path& f : out.trace_files)
    out.writers.push_back(std::make_unique<ChunkedTraceWriter>(f, t0, kControlTraceRule));
  for (ControlGpu& l : s.lanes) {
    l.rep.engaged = !s.gated;
    l.rep.reason = s.gated ? "" : l.rep.controller + ": controlling from the start";
  }
  if (s.gated) gate_on_probe(loop, t0, rep.probe_s, r, s, work);
  std::vector<control::ControlLane> engaged = engaged_lanes(s.lanes, guards);
  RunEnd end = RunEnd::Duration;
  std::unique_ptr<control::ControlLoop> cl;
  if (!engaged.empty()) cl = std::make_unique<control::ControlLoop>(loop, engaged, rep.dry_run);
  if (cl) engaged = learn_first(loop, cl, engaged, s, guards, work, rep.dry_run);
  if (cl && r.evaluate)
    out.windows = run_evaluation(loop, *cl, work, r, t0, s, rep, end);
  else
    end = run_to_end(loop, cl.get(), out.plan, out.segments, out.writers);
  for (size_t k = 0; cl && k < engaged.size(); ++k) {
    ControlReport& g = s.lanes[engaged[k].gpu].rep;
    g.actions.insert(g.actions.end(), cl->actions(k).begin(), cl->actions(k).end());
    g.decisions.insert(g.decisions.end(), cl->decisions(k).begin(), cl->decisions(k).end());
  }
  out.traces = loop.finish_all(&out.stats);
  for (size_t i = 0; i < out.traces.size(); ++i) out.writers[i]->write_chunk(out.traces[i]);
  if (out.plan.on) measure_last_segment(out);
  check_workload_end(end, work, out.stats);
  return out;
}

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

LaneFigures measure_lanes(const ControlRequest& r, ControlSetup& s, const RecordedControlRun& run,
                          bool evaluated) {
  LaneFigures out;
  for (size_t i = 0; i < s.lanes.size(); ++i) {
    ControlReport& g = s.lanes[i].rep;
    g.limit_after_W = s.gpus[i]->info().current_limit_W;
    g.duration_s = run.stats.t_end_s - run.stats.t_start_s;
    g.origin_s = run.stats.t_start_s;
    g.measurement =
        run.plan.on ? run.segments[i].result() : measure(run.traces[i], measure_options(r));
    out.per_gpu.push_back(g.measurement);
    if (evaluated) {
      out.windows.push_back(measure_windows(run.traces[i], run.windows, s.settle_s));
      for (const EvaluationWindow& w : out.windows.back())
        run.writers[i]->write_figures(
            window_figures(w.controlled ? "controlled" : "baseline", w.measurement));
    }
    run.writers[i]->finish();
    g.trace = control_trace_json({run.trace_files[i]});
    if (g.evaluation) {
      g.evaluation->windows = out.windows.back();
      judge_windows(*g.evaluation);
    }
  }
  return out;
}

std::vector<EvaluationWindow> job_windows(
    const std::vector<std::vector<EvaluationWindow>>& per_gpu_windows) {
  std::vector<EvaluationWindow> out;
  if (per_gpu_windows.empty()) return out;
  for (size_t w = 0; w < per_gpu_windows.front().size(); ++w) {
    EvaluationWindow jw = per_gpu_windows.front()[w];
    std::vector<Measurement> ms;
    for (const auto& g : per_gpu_windows) ms.push_back(g[w].measurement);
    jw.measurement = combine_data_parallel(ms);
    out.push_back(jw);
  }
  return out;
}

ControlReport one_gpu_report(const ControlReport& lane, const ControlReport& run) {
  ControlReport out = lane;
  out.usage = run.usage;
  out.warnings = run.warnings;
  return out;
}

namespace {

// The job's summary of its GPUs' reasons: "nvml:0: ...; nvml:1: ...".
std::string job_reason(const std::vector<ControlGpu>& lanes) {
  std::string out;
  for (const ControlGpu& l : lanes)
    out += (out.empty() ? "" : "; ") + l.rep.device + ": " + l.rep.reason;
  return out;
}

}  // namespace

void gather_job_report(ControlReport& rep, const std::vector<ControlGpu>& lanes,
                       const LaneFigures& figures, const RunStats& stats) {
  rep.gpus.clear();
  for (const ControlGpu& l : lanes) rep.gpus.push_back(l.rep);
  rep.engaged =
      std::any_of(lanes.begin(), lanes.end(), [](const ControlGpu& l) { return l.rep.engaged; });
  rep.reason = job_reason(lanes);
  rep.limit_after_W = lanes.front().rep.limit_after_W;
  rep.duration_s = stats.t_end_s - stats.t_start_s;
  rep.origin_s = lanes.front().rep.origin_s;
  rep.measurement = combine_data_parallel(figures.per_gpu);
  rep.spread = gpu_spread(figures.per_gpu);
  std::vector<std::filesystem::path> files;
  for (const ControlGpu& l : lanes)
    if (l.rep.trace.is_object())
      for (const auto& f : l.rep.trace["files"]) files.emplace_back(f.get<std::string>());
  rep.trace = control_trace_json(files);
  std::vector<Regime> regimes;
  for (const ControlGpu& l : lanes)
    if (l.rep.probe) regimes.push_back(l.rep.probe->regime);
  if (!regimes.empty()) rep.job_regime = job_regime(regimes);
  if (rep.evaluation) {
    rep.evaluation->windows = job_windows(figures.windows);
    judge_windows(*rep.evaluation);
  }
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

}  // namespace regime::session
