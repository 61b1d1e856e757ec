#include "session/study_steps.hpp"

#include <fmt/core.h>

#include "analysis/data_parallel.hpp"
#include "plan/render.hpp"

namespace regime::session {

ProbeVerdict classify_probe(const std::vector<Measurement>& per_gpu,
                            const std::vector<GpuInfo>& infos) {
  ProbeVerdict v;
  std::vector<Regime> names;
  for (size_t i = 0; i < per_gpu.size(); ++i) {
    v.gpus.push_back(classify(per_gpu[i], infos.at(i)));
    names.push_back(v.gpus.back().regime);
  }
  const Regime job = job_regime(names);
  while (v.gpus[v.gpu].regime != job) ++v.gpu;
  v.regime = v.gpus[v.gpu];
  v.job = combine_data_parallel(per_gpu);
  return v;
}

plan::SweepPlan plan_study_sweep(const ProbeVerdict& v, const std::vector<GpuInfo>& infos) {
  return plan::plan_sweep(v.regime, infos.at(v.gpu));
}

void plan_study(const StudyRequest& r, const RunSite& site, const std::vector<Measurement>& per_gpu,
                const ActuationPolicy& policy, StudyReport& rep) {
  const ProbeVerdict verdict = classify_probe(per_gpu, site.infos);
  rep.regime = verdict.regime;
  if (site.job()) {
    rep.gpu_regimes = verdict.gpus;
    rep.job_measurement = verdict.job;
  }
  rep.plan = plan::plan_sweep(verdict.regime, site.infos.at(verdict.gpu));
  rep.sweep_command = plan::sweep_command(
      {r.device.text, r.workload.builtin, r.workload.command, r.workload.step_regex.value_or(""),
       plan::to_string(r.settings.strategy), r.settings.objective.text()},
      rep.plan.caps);

  if (!rep.plan.sweep) {
    rep.skipped = rep.plan.why;
  } else if (rep.regime.measurement.per_second && !r.settings.budget.accept_per_second) {
    rep.skipped = no_step_markers_message(
        rep.workload, rep.regime.measurement.window_end_s - rep.regime.measurement.window_start_s);
  } else if (policy.read_only) {
    rep.skipped = "REGIME_READ_ONLY is set: nothing is changed. To sweep, unset it and run: " +
                  rep.sweep_command;
  } else if (site.physical && !r.actuate) {
    rep.skipped =
        "a sweep changes the power limit of this real GPU, and --actuate was not given: "
        "nothing was changed. To sweep, run: " +
        rep.sweep_command;
  }
}

}  // namespace regime::session
