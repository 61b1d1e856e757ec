#include "session/sweep/sweep_restart.hpp"

#include "session/probe/default_regime.hpp"

namespace regime::session {

void search_restart(SweepReport& rep, const RunSite& site, plan::SearchOptions opt,
                    PowerLimitGuard& guard, const ProbeBudget& budget) {
  RestartProber prober(*site.gpus.front(), *site.clock, site.start_workload, guard, budget);
  opt.classify = classify_at_default(site.infos, nullptr);
  rep.outcome = plan::search(prober, opt);
  if (plan::any_per_second(rep.outcome.probes)) rep.unit = "second";
}

}  // namespace regime::session
