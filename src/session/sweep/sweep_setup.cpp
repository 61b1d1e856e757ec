#include "session/sweep/sweep_setup.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "common/error.hpp"

namespace regime::session {

namespace {

// The node agent restores a cap when the connection that set it closes, so a cap left "set" by an
// unprivileged sweep would be gone when regime ends: refused before any work, saying what works.
void refuse_apply_through_agent(const SweepSettings& s, const std::vector<Gpu*>& gpus) {
  if (!s.apply) return;
  for (Gpu* g : gpus)
    if (g->changes_through_agent())
      throw Error(ErrorKind::ActuationRefused,
                  fmt::format("--apply cannot leave a cap on {}: its limit changes through the "
                              "node agent, which restores it when this command ends. Run the "
                              "sweep as root to keep the cap, or let jobs take the kept decision "
                              "(`--gpu-power=auto` under Slurm)",
                              g->info().device));
}

}  // namespace

SweepReport new_sweep_report(const std::vector<std::string>& devices,
                             const std::vector<GpuInfo>& infos, const std::string& workload) {
  SweepReport rep;
  if (devices.size() > 1) rep.job_devices = devices;
  rep.device = fmt::format("{}", fmt::join(devices, ","));
  rep.workload = workload;
  rep.info = infos.at(0);
  return rep;
}

void check_can_sweep(const RunSite& site, const SweepSettings& s, const ActuationPolicy& policy) {
  if (site.job() && s.mode != SweepMode::Live)
    throw Error(ErrorKind::InvalidArgument,
                "a job on several GPUs is swept live only (--mode live): a restart per cap would "
                "start every rank again");
  const GpuInfo& first = site.infos.front();
  for (const GpuInfo& g : site.infos)
    if (g.name != first.name || g.default_limit_W != first.default_limit_W ||
        g.min_limit_W != first.min_limit_W || g.max_limit_W != first.max_limit_W)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("one cap for a job needs GPUs of one model and range: {} is {} "
                              "({:g}-{:g} W), {} is {} ({:g}-{:g} W); sweep each GPU alone",
                              first.device, first.name, first.min_limit_W, first.max_limit_W,
                              g.device, g.name, g.min_limit_W, g.max_limit_W));
  for (size_t i = 0; i < site.gpus.size(); ++i) {
    const bool physical = site.gpus[i]->is_physical();
    check_actuation(policy, site.infos[i], physical, site.infos[i].default_limit_W);
    if (s.apply && physical && !policy.actuate)
      throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");
  }
  refuse_apply_through_agent(s, site.gpus);
}

}  // namespace regime::session
