#include "store/job_store.hpp"

#include <sqlite3.h>

#include "common/error.hpp"
#include "store/run_store.hpp"

namespace regime {

namespace {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw Error(ErrorKind::Io, std::string("run database: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  int step() {
    int rc = sqlite3_step(s_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      throw Error(ErrorKind::Io, std::string("run database: ") + sqlite3_errmsg(db_));
    return rc;
  }
  std::string text(int i) {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t != nullptr ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

JobRow read_row(Stmt& s, const std::filesystem::path& path) {
  JobRow r;
  r.job_id = s.text(0);
  r.node = s.text(1);
  r.status = s.text(2);
  try {
    r.record = nlohmann::json::parse(s.text(3));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Parse, path.string() + ": job " + r.job_id + " on " + r.node +
                                      ": malformed record: " + e.what());
  }
  return r;
}

}  // namespace

JobStore::JobStore(const std::filesystem::path& path) : path_(path) {
  { RunStore check(path); }  // creates the file, or refuses one that is not a run database
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(ErrorKind::Io, "cannot open run database " + path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);  // the prolog and epilog of other jobs write the same file
  char* err = nullptr;
  if (sqlite3_exec(db_,
                   "CREATE TABLE IF NOT EXISTS jobs (job_id TEXT NOT NULL, node TEXT NOT NULL,"
                   " status TEXT NOT NULL, record_json TEXT NOT NULL,"
                   " PRIMARY KEY (job_id, node));",
                   nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    fail(msg);
  }
}

JobStore::~JobStore() { sqlite3_close(db_); }

void JobStore::fail(const std::string& what) {
  throw Error(ErrorKind::Io, "run database " + path_.string() + ": " + what);
}

void JobStore::put(const JobRow& row) {
  Stmt s(db_,
         "INSERT OR REPLACE INTO jobs (job_id, node, status, record_json) VALUES (?, ?, ?, ?)");
  s.bind(1, row.job_id);
  s.bind(2, row.node);
  s.bind(3, row.status);
  s.bind(4, row.record.dump());
  s.step();
}

std::optional<JobRow> JobStore::get(const std::string& job_id, const std::string& node) {
  Stmt s(db_, "SELECT job_id, node, status, record_json FROM jobs WHERE job_id = ? AND node = ?");
  s.bind(1, job_id);
  s.bind(2, node);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  return read_row(s, path_);
}

std::vector<JobRow> JobStore::rows(const std::string& job_id) {
  Stmt s(db_, "SELECT job_id, node, status, record_json FROM jobs WHERE job_id = ? ORDER BY node");
  s.bind(1, job_id);
  std::vector<JobRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_row(s, path_));
  return out;
}

}  // namespace regime
