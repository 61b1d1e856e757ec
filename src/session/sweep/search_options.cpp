#include "session/sweep/search_options.hpp"

#include "plan/twin_curve.hpp"

namespace regime::session {

plan::SearchOptions search_options(const GpuInfo& info, const SweepSettings& s,
                                   std::vector<double> caps) {
  plan::SearchOptions opt;
  opt.strategy = s.strategy;
  opt.decision.objective = s.objective;
  opt.decision.default_limit_W = info.default_limit_W;
  opt.decision.max_power_W = info.max_limit_W;
  opt.force = s.force;
  opt.caps = std::move(caps);
  opt.on_probe = s.on_probe;
  return opt;
}

void configure_curve(SweepReport& rep, plan::SearchOptions& opt,
                     const std::optional<twin::GpuSpec>& spec) {
  plan::configure_curve(opt, spec);
  if (opt.strategy == plan::Strategy::Adaptive) rep.curve = plan::curve_note(spec);
}

void apply_prior(SweepReport& rep, plan::SearchOptions& opt, const SweepSettings& s,
                 const std::string& gpu, const std::string& workload) {
  if (!s.prior) return;
  rep.prior = s.prior->name;
  rep.prior_draw_W = predicted_draw_W(*s.prior, gpu, workload, s.llm, s.db);
  opt.start_cap_W = rep.prior_draw_W;
}

plan::SearchOptions sweep_search_options(SweepReport& rep, size_t gpus,
                                         const std::optional<twin::GpuSpec>& spec,
                                         const std::vector<double>& caps, const SweepSettings& s) {
  plan::SearchOptions opt = search_options(rep.info, s, caps);
  configure_curve(rep, opt, spec);
  // P_max of the job (zeus): every GPU may draw its highest limit.
  opt.decision.max_power_W = rep.info.max_limit_W * static_cast<double>(gpus);
  apply_prior(rep, opt, s, rep.info.name, rep.workload);
  // Heat drifts under a sweep: the default is measured again at the end (plan/decision.hpp).
  opt.remeasure_default = true;
  if (s.on_plan) s.on_plan(caps.size() + 1);
  rep.strategy = opt.strategy;
  rep.objective = opt.decision.objective;
  return opt;
}

}  // namespace regime::session
