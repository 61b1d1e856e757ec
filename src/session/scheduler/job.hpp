#pragma once
// A scheduler job's power policy on one node: what its prolog does (`regime job begin`: read the
// energy counters of the job's GPUs, choose the cap its policy gives each, apply it) and what its
// epilog does (`regime job end`: read the counters again, restore the limits, record the energy).
// The job is kept in the run database between the two, and every cap is in the power-limit
// journal, so an epilog run by a restarted slurmd, or `regime restore` after a reboot, finds them.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/client.hpp"
#include "common/gpu_info.hpp"
#include "device/gpu.hpp"
#include "session/scheduler/job_gpus.hpp"
#include "session/scheduler/job_types.hpp"
#include "store/run_store.hpp"

namespace regime::session {

// What a policy does to one GPU: a cap, or the limit left as it is, and why.
struct CapChoice {
  std::optional<double> cap_W;
  std::string why;
  std::optional<int64_t> sweep_id;  // auto: the kept sweep that decided
  std::string skipped;              // auto: why that sweep's row could not be used (limit kept)
};

// Pure. `sweeps` newest first (RunStore::list_sweeps); auto takes the newest one for this GPU
// model and workload, checked whole (read_stored_decision): a row that cannot be used leaves the
// limit as it is and says why in `skipped`, whatever it holds. A fixed or percentage cap outside
// the GPU's range is not a choice: Error OutOfRange.
CapChoice choose_cap(const PowerPolicy& policy, const GpuInfo& gpu,
                     const std::vector<SweepRecord>& sweeps, const std::string& workload);

// One common cap for a job's GPUs when they are of one model; with several models each keeps its
// own (the slowest GPU sets a data-parallel step's time, so one model's cap is not another's).
// Returns the choices in the order of `gpus`.
std::vector<CapChoice> choose_caps(const PowerPolicy& policy, const std::vector<GpuInfo>& gpus,
                                   const std::vector<SweepRecord>& sweeps,
                                   const std::string& workload);

// Records the job, reads its GPUs' energy counters, applies the caps. A cap the policy gives that
// is outside a GPU's range leaves every GPU of the job as it is, and says so in the result (the
// job runs; the node is not at fault). Returns the job's record.
nlohmann::json begin_job(const JobBegin& job);

// Reads the counters, restores the job's caps, records the energy. Nothing recorded for the job on
// this node: returns null (a job that asked for nothing, or a node it did not use). A job begun in
// an earlier boot of the node is ended with its energy unknown ("rebooted": true) and no limit
// changed: the reboot reset them. Removes the job's journal entry once the record is done.
nlohmann::json end_job(const std::string& job_id, const std::string& node, const JobDatabase& db);

// A job the node began in an earlier boot and never ended (its epilog did not run: the node
// rebooted, or lost power, under it), as the restore at boot finds it in the job journal.
struct StaleJob {
  std::string job_id;
  std::string node;
  DatabaseLocation db;
  nlohmann::json record;  // as ended; null when not ended (dry run, error, nothing recorded)
  std::string error;      // why it could not be ended
};

// Ends the record of every job of an earlier boot (end_job: energy unknown, the limits as the
// reboot left them) and removes its journal entry; with dry_run only lists them. For `regime
// restore`, which runs at boot before slurmd and the agent start.
std::vector<StaleJob> end_jobs_of_earlier_boots(bool dry_run);

// The line written to the job's AdminComment, in lower case because sacctmgr stores it so:
//   regime gpu_energy_j=TOTAL gpus=N power=P [cap_w=W] nodes=NODE:GPUS:JOULES,...
// `existing` is the comment as the job has it now (other nodes' epilogs of the same job write it
// too): its nodes are kept, this node's entry replaced, and the totals summed over all of them.
// A total is "unknown" when any node's energy is.
std::string admin_comment(const nlohmann::json& record, const std::string& existing = "");

}  // namespace regime::session
