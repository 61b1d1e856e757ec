#pragma once
// --gpu-power=study for a scheduler job: while the job runs, a detached `regime job study` process
// (started by `regime job begin`, as root) watches the job's GPUs through the step markers the
// job sends to a socket named in advance, probes them at the limit they have, names the regime,
// and, where the regime warrants it, steps every GPU of the job through the caps of the study's
// plan (through the node agent or the journal, as `job begin` sets caps: JobCaps). It then applies
// the decision for the rest of the job, keeps the sweep and its decision in the run store under
// the job's workload name (so that a later --gpu-power=auto job with that name finds it), writes
// what it did into the job's record, and exits. Without step markers it decides nothing and leaves
// the limits as they are. The job's epilog (`job end`) stops a study still running and restores
// the caps as for any job. On a job of several nodes only the leader (its record's
// "study_leader", session/scheduler/job_leader.hpp) studies; every other node follows: it waits for
// the leader's decision in the shared run store and sets that cap on its own GPUs.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "session/scheduler/job_types.hpp"
#include "session/sweep/sweep.hpp"

namespace regime::session {

struct JobStudyRequest {
  std::string job_id;
  std::string node;
  DatabaseLocation db;
  std::string step_socket;    // where the job's tasks send their step markers
  double probe_seconds = 60;  // the probe at the limit the GPUs have
  SweepSettings settings;     // strategy, objective, probe budget
  // A follower: how long it waits for the leader's decision, and how often it looks. The leader's
  // probe and sweep take minutes; an hour bounds a leader that never writes.
  double leader_wait_s = 3600;
  double leader_poll_s = 1;
};

// Runs the study; returns the record's "study" object: {"outcome": decided | keep_default |
// no_step_markers | interrupted | failed, "why", "regime", "sweep_id", "decision", "cap_W"}.
// A follower's: {"leader", "outcome": decided | keep_default | leader_undecided | leader_timeout |
// no_shared_store | cap_refused | interrupted, "why", "cap_W", "sweep_id"}; it keeps its limits
// unless the outcome is decided.
// Error NotFound when the job has no running record on this node with --gpu-power=study.
nlohmann::json study_job(const JobStudyRequest& request);

// Starts `regime job study` for the job as a detached process (its own session, output to a log
// beside the job journal) and records its pid in the job journal. Returns the pid.
int spawn_job_study(const JobBegin& job);

// Stops the job's study process if it still runs: SIGTERM, then SIGKILL after `grace_s`.
// Returns true when one was running.
bool stop_job_study(const std::string& job_id, const std::string& node, double grace_s = 10);

}  // namespace regime::session
