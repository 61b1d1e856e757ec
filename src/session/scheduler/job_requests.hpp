#pragma once
// What `regime job begin|study|end|show` ask of the session beyond session/scheduler/job.hpp: the
// defaults a scheduler's prolog leaves out (this node's name, the run store), a --gpu-power that
// cannot be read refused rather than failed, and every node's row kept for a job.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "session/scheduler/job.hpp"
#include "session/scheduler/job_study.hpp"

namespace regime::session {

// $SLURMD_NODENAME (Slurm names the node in the prolog's environment), else the host name.
std::string this_node();

// The run store a job is kept in: `db`, the default's file found now (when a command runs, not
// when it is added: --help needs none), so that a prolog, its study and its epilog name one file.
DatabaseLocation job_db(const DatabaseLocation& db);

// begin_job with the policy the job's owner chose (cli::read_power_policy). One that could not be
// read was refused, not failed: the job runs with its limits as they are (default), `on_refused`
// hears why before anything is done, and the record says so in "policy_refused":
// {"asked", "why"}. A stored decision that auto could not use (begin_job's "skipped_rows") is
// told to `on_refused` too, after. The default `job.db` is found as job_db finds it.
nlohmann::json begin_job_as_asked(JobBegin job,
                                  const std::function<void(const std::string& why)>& on_refused);

// study_job with the node and run store a prolog's `job begin` would take when the request names
// none.
nlohmann::json study_job_here(JobStudyRequest request);

struct JobEnd {
  DatabaseLocation db;        // where the job was looked up
  nlohmann::json record;      // end_job's: null when nothing was recorded for the job on this node
  std::string admin_comment;  // with a record: `existing_comment` with this node's energy merged
};
JobEnd end_job_merging(const std::string& job_id, const std::string& node, const JobDatabase& db,
                       const std::string& existing_comment);

// {"db", "job_id", "nodes": [{"node", "status", "record"}, ...]}: every node's row of the job.
nlohmann::json show_job(const std::string& job_id, const DatabaseLocation& db);

}  // namespace regime::session
