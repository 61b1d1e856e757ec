#pragma once
// The steps of `regime study` between its probe and its sweep: the regime and the sweep it
// warrants. classify_probe and plan_study_sweep serve a scheduler job's study
// (session/scheduler/job_study.hpp) too.
#include <string>
#include <string_view>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "analysis/measure.hpp"
#include "plan/study_plan.hpp"
#include "session/site/site.hpp"
#include "session/study/study_types.hpp"

namespace regime::session {

// Why a step that changes a real GPU's power limit was not taken without --actuate: `step` says
// what changes it ("a sweep"), `left` what was left as it was (": nothing was changed", or ""),
// `to_do` what the command does ("sweep"), `command` the command that does it.
std::string needs_actuate_message(std::string_view step, std::string_view left,
                                  std::string_view to_do, const std::string& command);

// The probe's regime, and the sweep it warrants.
struct ProbeVerdict {
  RegimeReport regime;             // the job's: its most constrained GPU's report (one GPU's own)
  size_t gpu = 0;                  // whose report that is
  std::vector<RegimeReport> gpus;  // each GPU's, in order
  Measurement job;                 // energy summed over the GPUs, the shared steps
};
// The job's verdict from each GPU's own report: the GPU a limit holds back sets the shared step.
ProbeVerdict probe_verdict(std::vector<RegimeReport> per_gpu);
// Each GPU classified on its own figures, then probe_verdict.
ProbeVerdict classify_probe(const std::vector<Measurement>& per_gpu,
                            const std::vector<GpuInfo>& infos);
// The caps the probe's regime warrants, on the GPU that names it.
plan::SweepPlan plan_study_sweep(const ProbeVerdict& verdict, const std::vector<GpuInfo>& infos);
// The regime, the plan, the `regime sweep` command that does it by hand (its strategy and
// objective as `settings`, the study's settings_json, records them), and, when the sweep is not
// to run here, why (rep.skipped): nothing to sweep, no step markers, read-only, or a real GPU
// without --actuate.
void plan_study(const StudyRequest& request, const RunSite& site, std::vector<RegimeReport> per_gpu,
                const nlohmann::json& settings, const ActuationPolicy& policy, StudyReport& rep);

}  // namespace regime::session
