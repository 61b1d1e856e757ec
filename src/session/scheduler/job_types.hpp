#pragma once
// What `regime job begin` is given by the scheduler's prolog (session/scheduler/job.hpp runs it;
// a study of the job is started from it, session/scheduler/job_study.hpp).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/database_location.hpp"

namespace regime::session {

// --db as a job's prolog and epilog take it. One they cannot read (a malformed server URI) does
// not fail them, as a failed prolog or epilog drains the node: it stands for a store that cannot
// be opened, `refused` saying why, and the job runs with its limits as they are.
struct JobDatabase {
  DatabaseLocation location;
  std::string refused;  // empty: read
  // The location; Error InvalidArgument saying why when --db was refused.
  const DatabaseLocation& readable() const;
};

// --gpu-power: default (leave the limit, measure energy), auto (the stored decision for the GPU
// model and workload, else default), study, a cap in watts ("250", "250W") or a share of the
// default limit ("80%").
struct PowerPolicy {
  enum class Kind { Default, Auto, Study, Watts, Percent };
  Kind kind = Kind::Default;
  double value = 0;  // watts or percent
  std::string text;  // canonical: "default", "250", "80%"
};

// A --gpu-power that could not be read: the job runs with its limits as they are (default).
struct PolicyRefusal {
  std::string asked;
  std::string why;
};

struct JobBegin {
  std::string job_id;
  std::string node;
  long uid = -1;
  std::vector<int>
      gpus;  // the job's GPUs on this node, by device minor number (cli::parse_job_gpu_list)
  PowerPolicy policy;                           // --gpu-power (cli::read_power_policy)
  std::optional<PolicyRefusal> policy_refused;  // what was asked, when it could not be read
  std::string workload;                         // auto: the workload name sweeps were kept under
  JobDatabase db;
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
