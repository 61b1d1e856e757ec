#include "session/study/study_probe.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <utility>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "analysis/phases.hpp"
#include "analysis/probe_regime.hpp"
#include "analysis/steady_state.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"
#include "session/probe/probe_window.hpp"
#include "trace/csv.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

// Temperature flat: the heating has run its course (the probers' settle tolerance).
constexpr double kStudyFlatTemp_C_per_min = 0.5;
constexpr double kStudySlopeWindow_s = 20;

// What the probe's run gave: each GPU's trace and how the run ended.
struct ProbeRun {
  std::vector<Trace> traces;
  RunEnd end = RunEnd::StopRequested;
  std::optional<int> exit_status;
};

// Whether one GPU is still heating at `now_s` (phases judged cycle against cycle: a real H100
// running 8 s of training and 8 s of data stall read as heating by its trailing window until the
// command ended), and how fast, in C per minute (0 where unknown).
std::pair<double, bool> heating_at(const Trace& t, double t0_s, double now_s) {
  const int gpu = t.samples.empty() ? 0 : t.samples.front().gpu;
  const std::optional<HeatingRate> h = heating_rate(t, t0_s, now_s, kStudySlopeWindow_s, gpu);
  if (!h) return {0, false};
  TrailingSlopes slopes;
  slopes.temp_C = h->temp_C;
  return {h->temp_C.per_min, !slopes_flat(slopes, kStudyFlatTemp_C_per_min, 1e9)};
}

// On a started loop: probe_seconds, then on in steps of 5 s while a GPU is still heating (up to
// max_probe_seconds); records the fastest heating slope in `rep`. How the run ended.
RunEnd watch_until_flat(const StudyRequest& r, RunSite& site, RunLoop& loop, StudyReport& rep) {
  const double t0 = loop.now_s();
  RunEnd end =
      loop.run_until([&](const Trace&, double now) { return now >= t0 + r.probe_seconds; });
  const double most_s = std::max(r.probe_seconds, r.max_probe_seconds);
  double slope_C_per_min = 0;  // of the GPU heating fastest
  while (true) {
    const double now = loop.now_s();
    rep.still_heating = false;
    for (size_t i = 0; i < site.gpus.size(); ++i) {
      const auto [per_min, heating] = heating_at(loop.trace(i), t0, now);
      if (i == 0 || (heating && !rep.still_heating)) slope_C_per_min = per_min;
      rep.still_heating = rep.still_heating || heating;
    }
    if (!rep.still_heating || end != RunEnd::StopRequested || now >= t0 + most_s) break;
    end = loop.run_until([&](const Trace&, double t) { return t >= now + 5; });
  }
  rep.end_temp_slope_C_per_min = slope_C_per_min;
  return end;
}

// A run of its own for the probe: started, watched until flat, stopped.
ProbeRun run_until_flat(const StudyRequest& r, RunSite& site, StudyReport& rep) {
  WorkloadPtr work = site.start_workload();
  RunOptions o;
  o.duration_s = 0;  // until the heating is over or the workload ends
  RunLoop loop(site.gpus, *work, o, *site.clock);
  loop.start();
  ProbeRun run;
  run.end = watch_until_flat(r, site, loop, rep);
  RunStats stats;
  run.traces = loop.finish_all(&stats);
  run.exit_status = work->exit_status();
  rep.probe_ran_s = stats.t_end_s - stats.t_start_s;
  return run;
}

// DIR/probe.trace.csv, .steps.csv and .power.csv; -gpuN before the suffix for a job's GPUs.
void write_probe_files(const std::string& out_dir, const std::vector<Trace>& traces) {
  if (out_dir.empty()) return;
  for (size_t i = 0; i < traces.size(); ++i) {
    const fs::path trace = probe_trace_file(out_dir, i, traces.size());
    write_trace_csv(trace, traces[i].samples);
    write_steps_csv(*sibling_steps_path(trace), traces[i].steps);
    if (!traces[i].power_points.empty())
      write_power_csv(*sibling_power_path(trace), traces[i].power_points);
  }
}

// The probe's traces kept for the report page: the first GPU's, and every GPU's of a job.
void keep_probe_traces(const std::vector<Trace>& traces, StudyReport& rep) {
  rep.probe_trace = traces.front();
  if (traces.size() > 1) rep.job_probe_traces = traces;
}

void warn_of_probe(const StudyRequest& r, StudyReport& rep) {
  if (!r.workload.command.empty() && rep.probe_trace.steps.empty())
    rep.warnings.push_back(
        "no step markers arrived during the probe, so the figures are per second; mark steps "
        "with python/regime_step or --step-regex");
  if (ran_on(rep.probe_ran_s, r.probe_seconds))
    rep.warnings.push_back(fmt::format(
        "the card was still heating after {:g} s: the probe ran {:.0f} s until its temperature "
        "was flat{}, and its last {:g} s are classified",
        r.probe_seconds, rep.probe_ran_s, rep.still_heating ? " (it never was)" : "",
        r.probe_seconds));
  if (rep.still_heating)
    rep.warnings.push_back(fmt::format(
        "the temperature was still rising {:.1f} C/min when the probe ended: the regime may still "
        "change as the card heats (a card that reaches its slowdown temperature turns "
        "thermal-bound); probe longer with --probe-seconds",
        rep.end_temp_slope_C_per_min));
}

// Each GPU's regime, named once from its figures over the probe's last probe_seconds (the whole
// run when it did not heat on); for a run of phases, the regime of the phase kind holding most of
// its energy, as regime probe names it, since that kind is where a cap saves or costs the most.
std::vector<RegimeReport> classify_probe_run(const StudyRequest& r, const RunSite& site,
                                             const ProbeRun& run, double ran_s) {
  std::vector<RegimeReport> per_gpu;
  for (size_t i = 0; i < run.traces.size(); ++i) {
    const Trace& t = run.traces[i];
    RegimeOrWhy named =
        name_probe_regime(t, site.infos.at(i), {}, heated_probe_span(t, ran_s, r.probe_seconds));
    if (!named.report)
      throw WorkloadFailed(
          fmt::format("the probe cannot name a regime{}: {}{}",
                      run.traces.size() > 1 ? " on " + site.devices[i] : std::string(),
                      named.too_short,
                      run.end == RunEnd::WorkloadFinished
                          ? "; the workload ended before there was enough to measure"
                          : ""),
          run.exit_status);
    per_gpu.push_back(std::move(*named.report));
  }
  return per_gpu;
}

}  // namespace

fs::path probe_trace_file(const std::string& out_dir, size_t gpu, size_t gpus) {
  return fs::path(out_dir) /
         (gpus > 1 ? fmt::format("probe-gpu{}.trace.csv", gpu) : std::string("probe.trace.csv"));
}

LiveProbe probe_on_run(const StudyRequest& r, RunSite& site, RunLoop& loop, Workload& work,
                       StudyReport& rep) {
  const double t0 = loop.now_s();
  ProbeRun run;
  run.end = watch_until_flat(r, site, loop, rep);
  rep.probe_ran_s = loop.now_s() - t0;
  for (size_t i = 0; i < site.gpus.size(); ++i) run.traces.push_back(loop.trace(i));
  run.exit_status = work.exit_status();
  keep_probe_traces(run.traces, rep);
  write_probe_files(r.out_dir, run.traces);
  warn_of_probe(r, rep);
  LiveProbe out;
  out.end_s = loop.now_s();
  out.command_ended = run.end == RunEnd::WorkloadFinished;
  try {
    out.per_gpu = classify_probe_run(r, site, run, rep.probe_ran_s);
  } catch (const WorkloadFailed& e) {
    out.unnamed = e.what();
  }
  return out;
}

std::vector<RegimeReport> probe_at_current_limit(const StudyRequest& r, RunSite& site,
                                                 StudyReport& rep) {
  const ProbeRun run = run_until_flat(r, site, rep);
  rep.probe_command_ended = !r.workload.command.empty() && run.end == RunEnd::WorkloadFinished;
  keep_probe_traces(run.traces, rep);
  write_probe_files(r.out_dir, run.traces);
  if (run.exit_status && *run.exit_status != 0 && run.end == RunEnd::WorkloadFinished)
    throw WorkloadFailed(
        fmt::format("the workload exited with status {} during the probe", *run.exit_status),
        run.exit_status);
  warn_of_probe(r, rep);
  return classify_probe_run(r, site, run, rep.probe_ran_s);
}

}  // namespace regime::session
