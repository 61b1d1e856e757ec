#pragma once
// Which GPUs a job uses, found from the job's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (as the
// command will get them: regime's environment, or an `env VAR=... cmd` prefix of the command)
// mapped to NVML GPUs by PCI bus id or UUID (device/cuda_devices.hpp), and checked against the
// GPUs --device names. `--device nvml:job` measures exactly the job's GPUs.
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "device/gpu.hpp"
#include "run/workload.hpp"
#include "session/site/target.hpp"

namespace regime::session {

// The value `var` will have in the command's environment: set or unset by a leading
// `env [-u NAME] [NAME=VALUE]... cmd`, else regime's own.
std::optional<std::string> command_env(const std::vector<std::string>& command,
                                       const std::string& var);

// nvml:job: the NVML GPUs the command will see, in CUDA's order (nvml:2, nvml:0); any other set
// as it is. Error InvalidArgument for nvml:job without a command, NotFound when the job sees no
// GPU.
DeviceSet resolve_job_devices(const DeviceSet& set, const WorkloadSpec& spec);

// The NVML GPUs this process's own CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER name, in CUDA's
// order, as a program started from it (a training script's `regime study --attach`) sees them:
// {"cuda_visible_devices", "cuda_device_order", "gpus": [{"cuda", "nvml", "uuid", "name",
// "pci_bus_id"}], "device" ("nvml:1,0"; null when it names none), "exact", "warnings"}. The one
// mapping `nvml:job` uses, for callers in other languages.
nlohmann::json cuda_visible_gpus_json();

// What the job uses against what is measured: {"cuda_visible_devices", "cuda_device_order",
// "job_gpus", "measured", "exact", "match", "warnings"}; null for a built-in (simulated) workload.
// A mismatch is a warning naming both sides.
nlohmann::json job_devices_json(const std::vector<GpuInfo>& measured, const WorkloadSpec& spec);

// job_devices_json for a command measured on one GPU. With CUDA_VISIBLE_DEVICES unset CUDA offers
// the command every GPU and it may use any one of them: only NVML's process list can tell
// (JobProcessWatch), so the mapping warns of nothing then. Null for a built-in workload.
nlohmann::json one_gpu_devices_json(const GpuInfo& measured, const WorkloadSpec& spec);

class JobProcessWatch;
// What the watch saw, added to `usage` (job_devices_json's) as "nvml_processes", and its
// warnings to both `usage` and `warnings`. Nothing when `usage` is null.
void add_process_findings(const JobProcessWatch& watch, nlohmann::json& usage,
                          std::vector<std::string>& warnings);

// The second way to find what a job uses: which GPUs NVML lists the job's processes on (the
// command and every process below it), checked now and then while it runs. It answers where
// CUDA_VISIBLE_DEVICES does not say (unset, so CUDA offers every GPU and the job picks, e.g.
// torch.cuda.set_device(local_rank)) and catches a job that uses a GPU other than the one
// measured. NVML lists host PIDs: inside a container with its own PID namespace the job's PIDs
// differ, nothing is seen, and only the CUDA_VISIBLE_DEVICES mapping stands.
class JobProcessWatch {
 public:
  // Watches every NVML GPU when the measured GPUs are NVML ones and the work is a command;
  // otherwise does nothing. `period_s` between checks on the run clock.
  JobProcessWatch(const std::vector<GpuInfo>& measured, const WorkloadSpec& spec,
                  double period_s = 2);
  ~JobProcessWatch();
  JobProcessWatch(const JobProcessWatch&) = delete;
  JobProcessWatch& operator=(const JobProcessWatch&) = delete;

  // Checks when a period has passed since the last check (the first at once).
  void maybe_check(const Workload& work, double now_s);
  // The job's process tree against each GPU's compute processes, now.
  void check(const Workload& work);

  // {"supported", "checks", "seen_on": ["nvml:2", ...], "pids": N}; null when not watching.
  nlohmann::json to_json() const;
  // A warning for each GPU the job was seen on but that is not measured, and for measured GPUs
  // none of its processes were seen on while it was seen on others.
  std::vector<std::string> warnings() const;
  // The NVML indices the job was seen on, in NVML order.
  std::vector<int> seen_on() const;

 private:
  struct Watched;
  std::vector<Watched> gpus_;
  std::vector<int> measured_;
  double period_s_;
  std::optional<double> last_s_;
  int checks_ = 0;
  bool supported_ = false;
  std::set<int> pids_seen_;
};

}  // namespace regime::session
