#include "session/site/site.hpp"

#include "session/site/command_gpus.hpp"

namespace regime::session {

RunSite open_site(const DeviceSet& devices, const WorkloadSpec& spec, const std::string& example) {
  check_can_run_on(devices, spec, example);
  RunSite site;
  site.workload = spec.display_name();
  site.targets = open_targets(resolve_job_devices(devices, spec));
  for (Target& t : site.targets) {
    site.gpus.push_back(&t.gpu());
    site.infos.push_back(t.gpu().info());
    site.devices.push_back(t.uri());
  }
  Target& first = site.targets.front();
  site.physical = first.gpu().is_physical();
  site.simulated = first.simulated();
  site.clock = &first.clock();
  site.spec = twin::find_gpu_spec(site.infos.front().name);
  // A moved vector keeps its elements where they are: `first` outlives moves of the site.
  site.start_workload = [&first, spec] { return first.make_workload(spec); };
  return site;
}

}  // namespace regime::session
