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

std::filesystem::path job_db(const std::filesystem::path& db) {
  return db.empty() ? RunStore::default_path() : db;
}

PowerPolicyChoice read_power_policy(const std::string& text) {
  try {
    return {parse_power_policy(text), std::nullopt};
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    return {parse_power_policy("default"), PolicyRefusal{text, e.what()}};
  }
}

nlohmann::json begin_job_as_asked(JobBegin job,
                                  const std::function<void(const std::string& why)>& on_refused) {
  job.db = job_db(job.db);
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

JobEnd end_job_merging(const std::string& job_id, const std::string& node,
                       const std::filesystem::path& db, const std::string& existing_comment) {
  JobEnd out{job_db(db), nullptr, ""};
  out.record = end_job(job_id, node, out.db);
  if (!out.record.is_null() && !out.record.contains("store_unreadable"))
    out.admin_comment = admin_comment(out.record, existing_comment);
  return out;
}

nlohmann::json show_job(const std::string& job_id, const std::filesystem::path& db) {
  const std::filesystem::path path = job_db(db);
  nlohmann::json rows = nlohmann::json::array();
  for (const JobRow& r : JobStore(path).rows(job_id))
    rows.push_back({{"node", r.node}, {"status", r.status}, {"record", r.record}});
  return {{"db", path.string()}, {"job_id", job_id}, {"nodes", rows}};
}

}  // namespace regime::session
