#pragma once
// A job on several nodes under --gpu-power=study is studied once: the first node of its node list
// (Slurm's order, where its rank 0 runs and so where python/regime_step sends step markers) leads
// and studies; every other node follows: it waits for the leader's decision in the shared run store
// and sets that cap on its own GPUs, so that a data-parallel job ends on one cap on every node.
// These are the pure parts: the node list, the leader, and what a follower makes of the leader's
// row as it stands.
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "store/job_store.hpp"

namespace regime::session {

// Slurm's compressed host list, as SLURM_JOB_NODELIST holds it ("n[1-3,7],gpu-a01"), expanded in
// its order, as `scontrol show hostnames` does (zero padding kept: "n[01-02]" is n01 n02). Error
// InvalidArgument naming the list and what is wrong (an unclosed bracket, a range that runs down).
std::vector<std::string> expand_hostlist(const std::string& list);

// The node that studies the job: the first of `nodes`; empty when the job has one node or none
// named (the node studies alone, as a one-node job does).
std::string study_leader(const std::vector<std::string>& nodes);

// $SLURM_JOB_NODELIST, else $SLURM_NODELIST (which slurmd's prolog environment holds); empty
// elsewhere.
std::string slurm_job_nodelist();

// What a follower does now, from the leader's row of the job (absent until the leader's prolog
// has recorded it).
struct LeaderDecision {
  enum class Act { Wait, Apply, Keep };
  Act act = Act::Wait;
  std::optional<double> cap_W;  // Apply: the leader's cap
  nlohmann::json sweep_id;      // the leader's kept sweep (in the shared store), or null
  std::string outcome;          // the follower's outcome: decided, keep_default, leader_undecided
  std::string why;
};
LeaderDecision read_leader_decision(const std::optional<JobRow>& leader_row,
                                    const std::string& leader);

// The leader's cap checked against this node's GPUs: empty when every GPU can take it, else the
// first refusal ("cap 900 W is outside the range of nvml:0 (200-700 W)"); a cap one GPU cannot
// take is set on none, as `job begin` refuses a cap.
std::optional<std::string> refuse_cap(const std::vector<GpuInfo>& gpus, double cap_W);

}  // namespace regime::session
