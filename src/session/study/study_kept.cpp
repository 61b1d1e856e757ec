#include "session/study/study_kept.hpp"

#include <fmt/core.h>

#include "act/guard_set.hpp"
#include "analysis/whole_run.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"
#include "session/sweep/sweep_limits.hpp"
#include "session/sweep/sweep_setup.hpp"

namespace regime::session {

namespace {

// The kept choice as a decision, so that --apply leaves it set as a study's own decision would.
plan::Decision kept_decision(const KeptChoice& kept) {
  plan::Decision d;
  d.keep_default = !kept.cap_W;
  d.cap_W = kept.cap_W.value_or(0);
  d.reason = kept.why;
  return d;
}

// The run from its first sample to its end, all of it at the kept decision.
WholeRunFigures kept_run_figures(const std::vector<Trace>& traces, const KeptChoice& kept) {
  StudyTimes times;
  const Trace& t = traces.front();
  times.probe_end_s = t.samples.empty() ? 0 : t.samples.front().t_s;
  times.sweep_end_s = times.probe_end_s;
  times.cap_W = kept.cap_W;
  return whole_run_figures(traces, times, std::nullopt);
}

}  // namespace

bool study_at_kept_decision(const StudyRequest& r, RunSite& site, const ActuationPolicy& policy,
                            StudyReport& rep) {
  if (!r.kept) return false;
  // The kept run trains at the decision until the workload ends: one that never ends would run
  // (and keep its trace) without bound.
  if (!r.workload.ends_of_its_own())
    throw Error(ErrorKind::InvalidArgument,
                "--auto runs the workload to its end at the kept cap: give a command, --attach, or "
                "a simulated workload with its length (e.g. sim:gemm,steps=30000)");
  const std::optional<KeptChoice> kept = r.kept(site.infos.front(), site.workload);
  if (!kept) return false;
  rep.kept = *kept;
  PowerLimitGuardSet guards(site.gpus, policy);
  if (kept->cap_W) {
    check_can_sweep(site, r.settings, policy);
    set_every(guards, *kept->cap_W);
  }
  WorkloadPtr work = site.start_workload();
  RunOptions o;
  o.duration_s = 0;  // until the workload ends
  RunLoop loop(site.gpus, *work, o, *site.clock);
  loop.start();
  loop.run_until([](const Trace&, double) { return false; });
  const std::vector<Trace> traces = loop.finish_all();
  rep.exit_status = work->exit_status();
  rep.kept_after = apply_or_restore(guards, kept_decision(*kept), r.settings.apply, rep.info);
  rep.whole_run = kept_run_figures(traces, *kept);
  rep.json = kept_json(rep);
  return true;
}

nlohmann::json kept_json(const StudyReport& rep) {
  const auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json job = rep.whole_run ? regime::to_json(*rep.whole_run) : nlohmann::json::object();
  job["exit_status"] = or_null(rep.exit_status);
  job["unfinished"] = nullptr;
  return {{"device", rep.device},
          {"workload", rep.workload},
          {"gpu", rep.info.name},
          {"stopped_command", false},
          {"kept",
           {{"sweep_id", rep.kept ? or_null(rep.kept->sweep_id) : nlohmann::json()},
            {"cap_W", rep.kept ? or_null(rep.kept->cap_W) : nlohmann::json()},
            {"why", rep.kept ? rep.kept->why : ""}}},
          {"job", job},
          {"regime", nullptr},
          {"sweep", nullptr},
          {"decision", nullptr},
          {"after", rep.kept_after}};
}

std::string kept_text(const StudyReport& rep) {
  std::string out =
      fmt::format("study of {} on {} ({})\n", rep.workload, rep.device, rep.info.name);
  if (rep.kept) out += "kept decision: " + rep.kept->why + "; nothing probed or searched\n";
  if (rep.whole_run) {
    const RunPart& p = rep.whole_run->run;
    out += fmt::format("the {} ran to its end{}: {} steps, {:.1f} s, {:.0f} J",
                       rep.sim_model.empty() ? "command" : "workload",
                       rep.exit_status ? fmt::format(" (exit status {})", *rep.exit_status) : "",
                       p.steps, p.seconds, p.energy_J);
    if (p.energy_per_step_J) out += fmt::format(" ({:.3f} J/step)", *p.energy_per_step_J);
    out += "\n";
  }
  out += "after: " + rep.kept_after + "\n";
  return out;
}

}  // namespace regime::session
