#pragma once
// The GPUs one command runs on, opened once from its typed --device and workload: one GPU, or
// every GPU of one job on one clock, with the workload checked against them before anything is
// opened and a way to start it there. A pipeline (sweep, study) takes a RunSite: it neither
// parses nor opens a device, nor knows whether the workload is a command or a simulated one.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/gpu_info.hpp"
#include "device/gpu.hpp"
#include "run/workload.hpp"
#include "session/site/target.hpp"
#include "twin/spec.hpp"

namespace regime::session {

struct RunSite {
  std::vector<Target> targets;       // as opened, in --device order (nvml:all expanded)
  std::vector<Gpu*> gpus;            // the run's GPUs: one, or the job's
  std::vector<GpuInfo> infos;        // each GPU's, as found when opened
  std::vector<std::string> devices;  // each GPU's URI, e.g. nvml:0
  std::string workload;              // as shown: sim:resnet50 or the command line
  bool physical = false;             // the GPUs are real (a job's are all real)
  bool simulated = false;            // one simulated GPU, on the simulator's clock
  Clock* clock = nullptr;            // the run's pace
  // The GPUs' model in data/gpus, looked up once (none for a model Regime does not know): the
  // sweep's curve and the study's control length read it.
  std::optional<twin::GpuSpec> spec;
  // The named workload, ready to start (a new one per call: a restart sweep starts it per cap).
  std::function<WorkloadPtr()> start_workload;

  bool job() const { return gpus.size() > 1; }
};

// `devices` (nvml:job resolved to the command's GPUs) opened for `spec`. Error InvalidArgument,
// before anything is opened, for a workload that is not one of a built-in or a command (`example`
// ends that message), one that cannot run on a device of the set, or several GPUs with a
// simulated one among them; the errors of opening after.
RunSite open_site(const DeviceSet& devices, const WorkloadSpec& spec, const std::string& example);

}  // namespace regime::session
