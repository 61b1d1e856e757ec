#include "session/scheduler/job_requests.hpp"

#include <unistd.h>

#include <cstdlib>

#include "common/error.hpp"
#include "store/job_store.hpp"
#include "store/run_store.hpp"

namespace regime::session {

std::string this_node() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0') return n;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

DatabaseLocation job_db(const DatabaseLocation& db) { return db.resolved(); }

nlohmann::json begin_job_as_asked(JobBegin job,
                                  const std::function<void(const std::string& why)>& on_refused) {
  if (job.db.refused.empty()) job.db.location = job_db(job.db.location);
  if (job.policy_refused && on_refused) on_refused(job.policy_refused->why);
  nlohmann::json record = begin_job(job);
  if (job.policy_refused)
    record["policy_refused"] = {{"asked", job.policy_refused->asked},
                                {"why", job.policy_refused->why}};
  if (on_refused)
    for (const auto& row : record.value("skipped_rows", nlohmann::json::array()))
      on_refused(row.at("reason").get<std::string>());
  return record;
}

nlohmann::json study_job_here(JobStudyRequest request) {
  if (request.node.empty()) request.node = this_node();
  request.db = job_db(request.db);
  return study_job(request);
}

JobEnd end_job_merging(const std::string& job_id, const std::string& node, const JobDatabase& db,
                       const std::string& existing_comment) {
  const JobDatabase found{db.refused.empty() ? job_db(db.location) : db.location, db.refused};
  JobEnd out{found.location, nullptr, ""};
  out.record = end_job(job_id, node, found);
  if (!out.record.is_null() && !out.record.contains("store_unreadable"))
    out.admin_comment = admin_comment(out.record, existing_comment);
  return out;
}

nlohmann::json show_job(const std::string& job_id, const DatabaseLocation& db) {
  const DatabaseLocation found = job_db(db);
  nlohmann::json rows = nlohmann::json::array();
  for (const JobRow& r : JobStore(found).rows(job_id))
    rows.push_back({{"node", r.node}, {"status", r.status}, {"record", r.record}});
  return {{"db", found.path().string()}, {"job_id", job_id}, {"nodes", rows}};
}

}  // namespace regime::session
