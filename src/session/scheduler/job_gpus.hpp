#pragma once
// A scheduler job's GPUs on this node, opened, and how its caps reach them and leave them.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/client.hpp"
#include "common/gpu_info.hpp"
#include "device/gpu.hpp"

namespace regime::session {

// The job's GPUs, opened; `indexes` are the backend's.
struct JobGpus {
  std::vector<GpuPtr> gpus;
  std::vector<Gpu*> raw;
  std::vector<GpuInfo> infos;
  std::vector<int> indexes;
};

// The GPUs a scheduler names, found among a node's GPUs. Slurm's GPU numbers (SLURM_JOB_GPUS, the
// gres indexes) are the N of gres.conf's File=/dev/nvidiaN, i.e. device minor numbers, which need
// not follow NVML's order. Returns, for each of `minors`, the position in `gpus` of the GPU with
// that minor number (a GPU whose backend knows none stands in with its index). Error NotFound
// naming the minor and the node's minors when no GPU has it, or when two have it.
std::vector<size_t> gpus_by_minor(const std::vector<int>& minors, const std::vector<GpuInfo>& gpus);

// The node's GPUs (SCHEME:all, through the site's door open_gpus), then the job's among them by
// minor number (gpus_by_minor's errors).
JobGpus open_job_gpus_by_minor(const std::string& scheme, const std::vector<int>& minors);

// One GPU of a job's record ("nvml:0"), opened through the site's door (open_gpus): the record
// names each GPU alone. Errors as the backend's.
GpuPtr open_recorded_gpu(const std::string& device);

// The GPUs of a job's record ({"gpus": [{"device", "uuid", "index"}]}) opened again through the
// site's door; Error
// NotFound when a device is now another GPU (its UUID differs) or the record holds none.
JobGpus reopen_job_gpus(const nlohmann::json& record, const std::string& job_id);

// How a job's caps reach its GPUs and leave them: the one place that changes limits for jobs.
// Through the node agent (regimed) when its socket exists: the job is declared with `begin`,
// each cap sent with `set`, all restored by `end` (the agent restores them too if it restarts).
// Else directly, as root: through PowerLimitGuard with the cap left set and the original in the
// journal, restored from the journal (or by `regime restore` after a reboot).
class JobCaps {
 public:
  // For a job's start: declares the job to the agent when there is one. Error as the agent's.
  JobCaps(const std::string& job_id, long uid, const std::vector<int>& gpus);
  // For a job's end, the way its start went.
  JobCaps(const std::string& job_id, bool via_agent);
  ~JobCaps();
  JobCaps(const JobCaps&) = delete;
  JobCaps& operator=(const JobCaps&) = delete;

  bool via_agent() const { return agent_ != nullptr; }
  // Sets the cap on the job's GPU `index`; returns the enforced limit.
  double apply(Gpu& gpu, int index, double cap_W);
  // Ends the job at the agent (restoring all its caps); nothing without one.
  void end();
  // Restores one GPU (from the journal without an agent); returns the enforced limit after.
  double restore(Gpu& gpu);

 private:
  std::string job_id_;
  std::unique_ptr<agent::AgentConnection> agent_;
};

}  // namespace regime::session
