#pragma once
// What `regime job begin` is given by the scheduler's prolog (session/scheduler/job.hpp runs it;
// a study of the job is started from it, session/scheduler/job_study.hpp).
#include <filesystem>
#include <string>

namespace regime::session {

struct JobBegin {
  std::string job_id;
  std::string node;
  long uid = -1;
  std::string gpus;      // the scheduler's list of the job's GPUs on this node (minor numbers)
  std::string policy;    // --gpu-power
  std::string workload;  // auto: the workload name sweeps were kept under
  std::filesystem::path db;
  std::string scheme = "nvml";  // device URI scheme of the node's GPUs (SCHEME:all opens them)
  // study: the socket the job's tasks send step markers to (the plugin exports it to them as
  // REGIME_STEP_SOCKET), and the length of the probe at the default limit.
  std::string step_socket;
  double study_probe_seconds = 60;
  // study: the job's nodes in Slurm's form (SLURM_JOB_NODELIST, "n[1-2]"). With several, the
  // first studies and the others take its decision (session/scheduler/job_leader.hpp).
  std::string nodes;
};

}  // namespace regime::session
