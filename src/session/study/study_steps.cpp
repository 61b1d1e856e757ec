#include "session/study/study_steps.hpp"

#include <fmt/core.h>

#include "analysis/data_parallel.hpp"
#include "present/render.hpp"

namespace regime::session {

std::string needs_actuate_message(std::string_view step, std::string_view left,
                                  std::string_view to_do, const std::string& command) {
  return fmt::format(
      "{} changes the power limit of this real GPU, and --actuate was not given{}. To {}, run: {}",
      step, left, to_do, command);
}

ProbeVerdict probe_verdict(std::vector<RegimeReport> per_gpu) {
  ProbeVerdict v;
  v.gpus = std::move(per_gpu);
  std::vector<Regime> names;
  std::vector<Measurement> measurements;
  for (const RegimeReport& g : v.gpus) {
    names.push_back(g.regime);
    measurements.push_back(g.measurement);
  }
  const Regime job = job_regime(names);
  while (v.gpus[v.gpu].regime != job) ++v.gpu;
  v.regime = v.gpus[v.gpu];
  v.job = combine_data_parallel(measurements);
  return v;
}

ProbeVerdict classify_probe(const std::vector<Measurement>& per_gpu,
                            const std::vector<GpuInfo>& infos) {
  std::vector<RegimeReport> reports;
  for (size_t i = 0; i < per_gpu.size(); ++i) reports.push_back(classify(per_gpu[i], infos.at(i)));
  return probe_verdict(std::move(reports));
}

plan::SweepPlan plan_study_sweep(const ProbeVerdict& v, const std::vector<GpuInfo>& infos) {
  return plan::plan_sweep(v.regime, infos.at(v.gpu));
}

void plan_study(const StudyRequest& r, const RunSite& site, std::vector<RegimeReport> per_gpu,
                const nlohmann::json& settings, const ActuationPolicy& policy, StudyReport& rep) {
  const ProbeVerdict verdict = probe_verdict(std::move(per_gpu));
  rep.regime = verdict.regime;
  if (site.job()) {
    rep.gpu_regimes = verdict.gpus;
    rep.regime_gpu = verdict.gpu;
    rep.job_measurement = verdict.job;
  }
  rep.plan = plan::plan_sweep(verdict.regime, site.infos.at(verdict.gpu));
  rep.sweep_command = plan::sweep_command(
      {r.device.text, r.workload.builtin, r.workload.command, r.workload.step_regex.value_or(""),
       settings.at("strategy").get<std::string>(), settings.at("objective").get<std::string>()},
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
        needs_actuate_message("a sweep", ": nothing was changed", "sweep", rep.sweep_command);
  }
}

}  // namespace regime::session
