#include "store/job_store.hpp"

#include <cctype>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "store/outbox.hpp"

namespace regime {

namespace {

JobRow read_row(const sql::Row& row, const std::filesystem::path& where) {
  JobRow r;
  r.job_id = sql::as_text(row.at(0));
  r.node = sql::as_text(row.at(1));
  r.status = sql::as_text(row.at(2));
  r.record = parse_json_or_discarded(sql::as_text(row.at(3)));
  if (r.record.is_discarded())
    throw Error(ErrorKind::Parse, where.string() + ": job " + r.job_id + " on " + r.node +
                                      ": malformed record: not JSON, or nested deeper than " +
                                      std::to_string(kMaxJsonDepth) + " levels");
  return r;
}

// The name of the node's copy of a job's row: the scheduler's ids and node names, any other
// character replaced, so that it stays one file name.
std::string cache_name(const std::string& job_id, const std::string& node) {
  std::string name = "job-" + job_id + "@" + node;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' &&
        c != '@')
      c = '_';
  return name;
}

}  // namespace

JobStore::JobStore(const DatabaseLocation& where) : store_(where) {}
JobStore::JobStore(const std::filesystem::path& path) : store_(path) {}

void JobStore::put(const JobRow& row) {
  const sql::Row values{row.job_id, row.node, row.status, row.record.dump()};
  if (store_.outbox_) store_.outbox_->cache(cache_name(row.job_id, row.node), {values});
  // REPLACE is both dialects' upsert on the (job_id, node) key, and sending it twice is harmless.
  store_.write("REPLACE INTO jobs (job_id, node, status, record_json) VALUES (?, ?, ?, ?)", values);
}

std::optional<JobRow> JobStore::get(const std::string& job_id, const std::string& node) {
  auto rows = store_.read(
      "SELECT job_id, node, status, record_json FROM jobs WHERE job_id = ? AND node = ?",
      {job_id, node}, store_.outbox_ ? cache_name(job_id, node) : "");
  if (rows.empty()) return std::nullopt;
  return read_row(rows[0], store_.path());
}

std::vector<JobRow> JobStore::rows(const std::string& job_id) {
  auto rows = store_.read(
      "SELECT job_id, node, status, record_json FROM jobs WHERE job_id = ? ORDER BY node",
      {job_id});
  std::vector<JobRow> out;
  for (const auto& r : rows) out.push_back(read_row(r, store_.path()));
  return out;
}

}  // namespace regime
