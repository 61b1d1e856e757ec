#include "session/study/study_whole_run.hpp"

#include <fmt/core.h>

#include "act/guard_set.hpp"
#include "analysis/whole_run.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"
#include "session/study/study_probe.hpp"
#include "session/study/study_steps.hpp"
#include "session/sweep/search_options.hpp"
#include "session/sweep/sweep_limits.hpp"
#include "session/sweep/sweep_search.hpp"
#include "session/sweep/sweep_setup.hpp"

namespace regime::session {

namespace {

// The sweep on the running command, through `guards`; the decision's cap (or the original limit)
// set for the rest. Returns false, with the limit restored and rep.unfinished saying so, when
// the command ended before the sweep could decide.
bool sweep_on_run(const StudyRequest& r, RunSite& site, RunLoop& loop, Workload& work,
                  PowerLimitGuardSet& guards, StudyReport& rep) {
  SweepReport sweep = new_sweep_report(site.devices, site.infos, site.workload);
  const plan::SearchOptions opt =
      sweep_search_options(sweep, site.gpus.size(), site.spec, rep.plan.caps, r.settings);
  const JobLimits limits{[&guards](double cap_W) { set_every(guards, cap_W); },
                         [&guards] { restore_every(guards); }};
  try {
    sweep_in_job(sweep, site.infos, opt, loop, work, limits, r.settings.budget);
  } catch (const WorkloadFailed& e) {
    rep.unfinished = fmt::format(
        "the command ended during the sweep, before a decision: {}; the original "
        "limit was restored",
        e.what());
    return false;
  }
  rep.sweep = std::move(sweep);
  return true;
}

// The last window the sweep measured at `cap_W`, when it measured one.
std::optional<Measurement> window_at(const SweepReport& sweep, double cap_W) {
  const auto& probes = sweep.outcome.probes;
  for (auto it = probes.rbegin(); it != probes.rend(); ++it)
    if (it->cap_W == cap_W) return it->measurement;
  return std::nullopt;
}

// The probe's figures at the starting limit: the job's (energy summed over its GPUs) or the one
// GPU's.
std::optional<Measurement> starting_figures(const StudyReport& rep) {
  if (rep.job_measurement) return rep.job_measurement;
  if (rep.regime.measurement.steps > 0 || rep.regime.measurement.per_second)
    return rep.regime.measurement;
  return std::nullopt;
}

}  // namespace

void sweep_in_job(SweepReport& sweep, const std::vector<GpuInfo>& infos,
                  const plan::SearchOptions& options, RunLoop& loop, Workload& work,
                  const JobLimits& limits, const ProbeBudget& budget) {
  try {
    search_live(sweep, infos, options, loop, work, limits.set, budget);
  } catch (const WorkloadFailed&) {
    if (limits.restore) limits.restore();
    throw;
  }
  const plan::Decision& d = sweep.outcome.decision;
  if (!d.keep_default)
    limits.set(d.cap_W);
  else if (limits.restore)
    limits.restore();
}

std::vector<Trace> run_job_to_end(RunLoop& loop, const JobEnded& ended) {
  loop.run_until([&ended](const Trace&, double) { return ended && ended(); });
  return loop.finish_all();
}

SavingBasis job_saving_basis(const std::optional<Measurement>& at_start, const GpuInfo& info,
                             const SweepReport* sweep) {
  const double default_W = info.default_limit_W;
  SavingBasis basis = saving_basis(at_start, info.enforced_limit_W,
                                   sweep ? window_at(*sweep, default_W) : std::nullopt, default_W);
  if (sweep) {
    const plan::Decision& d = sweep->outcome.decision;
    basis.decision = window_at(*sweep, d.keep_default ? default_W : d.cap_W);
  }
  return basis;
}

bool study_runs_whole(const StudyRequest& r) {
  return !r.stop_after_decision && r.workload.ends_of_its_own() &&
         r.settings.mode != SweepMode::Restart;
}

void study_whole_run(const StudyRequest& r, RunSite& site, const ActuationPolicy& policy,
                     const nlohmann::json& plan_settings, StudyReport& rep,
                     const std::function<void()>& keep_decided) {
  WorkloadPtr work = site.start_workload();
  RunOptions o;
  o.duration_s = 0;  // until the command ends
  RunLoop loop(site.gpus, *work, o, *site.clock);
  loop.start();
  StudyTimes times;
  LiveProbe probe = probe_on_run(r, site, loop, *work, rep);
  times.probe_end_s = probe.end_s;
  times.start_W = rep.info.enforced_limit_W;
  std::optional<PowerLimitGuardSet> guards;
  if (probe.per_gpu.empty()) {
    rep.unfinished = "no regime was named: " + probe.unnamed;
  } else {
    plan_study(r, site, std::move(probe.per_gpu), plan_settings, policy, rep);
    if (!rep.skipped.empty()) {
      times.sweep_end_s = probe.end_s;  // nothing to try: the rest runs at the starting limit
    } else if (probe.command_ended) {
      rep.unfinished = "the command ended with the probe: no cap was tried";
    } else {
      check_can_sweep(site, r.settings, policy);
      guards.emplace(site.gpus, policy);
      times.sweep_ran = true;
      if (sweep_on_run(r, site, loop, *work, *guards, rep)) {
        times.sweep_end_s = loop.now_s();
        const plan::Decision& d = rep.sweep->outcome.decision;
        if (!d.keep_default) times.cap_W = d.cap_W;
        rep.sweep->after = d.keep_default
                               ? "the original limit set for the rest of the command"
                               : fmt::format("{:g} W set for the rest of the command", d.cap_W);
        keep_decided();
      }
    }
  }
  const std::vector<Trace> traces = run_job_to_end(loop, nullptr);  // to the command's end
  rep.exit_status = work->exit_status();
  if (guards && rep.sweep)
    rep.sweep->after =
        apply_or_restore(*guards, rep.sweep->outcome.decision, r.settings.apply, rep.info);
  rep.whole_run = whole_run_figures(
      traces, times,
      job_saving_basis(starting_figures(rep), rep.info, rep.sweep ? &*rep.sweep : nullptr));
}

}  // namespace regime::session
