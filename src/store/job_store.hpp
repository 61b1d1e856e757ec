#pragma once
// Scheduler jobs in the run database (the same store as RunStore, file or server): one row per job
// and node, written when the job's prolog applies its power policy and completed by its epilog with
// the energy its GPUs used. The row's details are a JSON object (session/scheduler/job.hpp writes
// it), so the table stays the same when what a job records grows. With a server store that cannot
// be reached, a put is queued and the node keeps the row, so its epilog finds what its prolog
// wrote.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/run_store.hpp"

namespace regime {

struct JobRow {
  std::string job_id;  // the scheduler's id, e.g. Slurm's "1234"
  std::string node;    // the node it ran on (one row per node of a job)
  std::string status;  // running | done
  nlohmann::json record = nlohmann::json::object();
};

class JobStore {
 public:
  // Opens (creating when needed) the run database `where` names, or `path` as --db would name it,
  // as RunStore does. Error Io or Parse as RunStore.
  explicit JobStore(const DatabaseLocation& where);
  explicit JobStore(const std::filesystem::path& path);

  // Inserts or replaces the row of (job_id, node).
  void put(const JobRow& row);
  std::optional<JobRow> get(const std::string& job_id, const std::string& node);
  // Every node's row of a job, by node name.
  std::vector<JobRow> rows(const std::string& job_id);
  RunStore& store() { return store_; }

 private:
  RunStore store_;
};

}  // namespace regime
