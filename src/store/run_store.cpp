#include "store/run_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/version.hpp"

namespace regime {

namespace {

constexpr const char* kColumns =
    "id, started_at_s, started_at_utc, device, gpu_name, gpu_uuid, workload, options_json, status, "
    "exit_status, trace_path, steps_path, regime, confidence, measurement_json, report_json, "
    "driver_version, regime_version";

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw Error(ErrorKind::Internal, std::string("SQL error: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void real(int i, std::optional<double> v) {
    v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i);
  }
  void integer(int i, std::optional<int64_t> v) {
    v ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i);
  }
  void json(int i, const nlohmann::json& v) {
    if (v.is_null()) {
      sqlite3_bind_null(stmt_, i);
    } else {
      text(i, v.dump());
    }
  }
  // SQLITE_ROW or SQLITE_DONE; anything else is an error.
  int step() {
    int rc = sqlite3_step(stmt_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      throw Error(ErrorKind::Io, std::string("run database: ") + sqlite3_errmsg(db_));
    return rc;
  }
  bool is_null(int c) { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  std::string col_text(int c) {
    const unsigned char* t = sqlite3_column_text(stmt_, c);
    return t != nullptr ? reinterpret_cast<const char*>(t) : "";
  }
  double col_real(int c) { return sqlite3_column_double(stmt_, c); }
  int64_t col_int(int c) { return sqlite3_column_int64(stmt_, c); }
  nlohmann::json col_json(int c) {
    if (is_null(c)) return nullptr;
    return nlohmann::json::parse(col_text(c), nullptr, /*allow_exceptions=*/false);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Binds fields 2..16 in kColumns order (1 is the id).
void bind_fields(Statement& s, const RunRecord& r) {
  s.real(2, r.started_at_s);
  s.text(3, r.started_at_utc);
  s.text(4, r.device);
  s.text(5, r.gpu_name);
  s.text(6, r.gpu_uuid);
  s.text(7, r.workload);
  s.json(8, r.options);
  s.text(9, r.status);
  s.integer(10, r.exit_status);
  s.text(11, r.trace_path);
  s.text(12, r.steps_path);
  r.regime ? s.text(13, *r.regime) : s.integer(13, std::nullopt);
  s.real(14, r.confidence);
  s.json(15, r.measurement);
  s.json(16, r.report);
  s.text(17, r.driver_version);
  s.text(18, r.regime_version.empty() ? regime_version() : r.regime_version);
}

template <class Record, class Read>
std::vector<Record> list_rows(sqlite3* db, const char* columns, const char* table, size_t limit,
                              Read read) {
  std::string sql = std::string("SELECT ") + columns + " FROM " + table + " ORDER BY id DESC";
  if (limit > 0) sql += " LIMIT " + std::to_string(limit);
  Statement s(db, sql.c_str());
  std::vector<Record> out;
  while (s.step() == SQLITE_ROW) out.push_back(read(s));
  return out;
}

// The row of `table` with this id, read by `read`; empty when there is none.
template <class Record, class Read>
std::optional<Record> get_row(sqlite3* db, const char* columns, const char* table, int64_t id,
                              Read read) {
  Statement s(db, (std::string("SELECT ") + columns + " FROM " + table + " WHERE id=?1").c_str());
  s.integer(1, id);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  return read(s);
}

RunRecord read_record(Statement& s) {
  RunRecord r;
  r.id = s.col_int(0);
  r.started_at_s = s.col_real(1);
  r.started_at_utc = s.col_text(2);
  r.device = s.col_text(3);
  r.gpu_name = s.col_text(4);
  r.gpu_uuid = s.col_text(5);
  r.workload = s.col_text(6);
  r.options = s.col_json(7);
  r.status = s.col_text(8);
  if (!s.is_null(9)) r.exit_status = static_cast<int>(s.col_int(9));
  r.trace_path = s.col_text(10);
  r.steps_path = s.col_text(11);
  if (!s.is_null(12)) r.regime = s.col_text(12);
  if (!s.is_null(13)) r.confidence = s.col_real(13);
  r.measurement = s.col_json(14);
  r.report = s.col_json(15);
  r.driver_version = s.col_text(16);
  r.regime_version = s.col_text(17);
  return r;
}

constexpr const char* kSweepColumns =
    "id, started_at_utc, kind, device, gpu_name, gpu_uuid, workload, strategy, objective, "
    "default_limit_W, max_limit_W, table_csv, decision_json, report_json, driver_version, "
    "regime_version, options_json";

constexpr const char* kCreateSweeps =
    "CREATE TABLE IF NOT EXISTS sweeps ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, started_at_utc TEXT NOT NULL, kind TEXT NOT NULL,"
    " device TEXT NOT NULL, gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL,"
    " workload TEXT NOT NULL, strategy TEXT NOT NULL, objective TEXT NOT NULL,"
    " default_limit_W REAL NOT NULL, max_limit_W REAL NOT NULL, table_csv TEXT NOT NULL,"
    " decision_json TEXT, report_json TEXT);";

// The answers of LLM predictors (src/predict), keyed by the model and the whole prompt: what was
// asked and what came back, never the endpoint's key.
constexpr const char* kCreateLlmAnswers =
    "CREATE TABLE IF NOT EXISTS llm_answers ("
    " model TEXT NOT NULL, prompt TEXT NOT NULL, answer TEXT NOT NULL,"
    " answered_at_utc TEXT NOT NULL, PRIMARY KEY (model, prompt));";

SweepRecord read_sweep(Statement& s) {
  SweepRecord r;
  r.id = s.col_int(0);
  r.started_at_utc = s.col_text(1);
  r.kind = s.col_text(2);
  r.device = s.col_text(3);
  r.gpu_name = s.col_text(4);
  r.gpu_uuid = s.col_text(5);
  r.workload = s.col_text(6);
  r.strategy = s.col_text(7);
  r.objective = s.col_text(8);
  r.default_limit_W = s.col_real(9);
  r.max_limit_W = s.col_real(10);
  r.table_csv = s.col_text(11);
  r.decision = s.col_json(12);
  r.report = s.col_json(13);
  r.provenance.driver_version = s.col_text(14);
  r.provenance.regime_version = s.col_text(15);
  r.provenance.options = s.col_json(16);
  return r;
}

// Schema 3: what every result was made with, and the decisions, studies and controller runs.
constexpr const char* kSchema3 =
    "ALTER TABLE runs ADD COLUMN driver_version TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE runs ADD COLUMN regime_version TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE sweeps ADD COLUMN driver_version TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE sweeps ADD COLUMN regime_version TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE sweeps ADD COLUMN options_json TEXT;"
    "CREATE TABLE IF NOT EXISTS decisions ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, made_at_utc TEXT NOT NULL, source TEXT NOT NULL,"
    " sweep_id INTEGER REFERENCES sweeps(id), device TEXT NOT NULL, gpu_name TEXT NOT NULL,"
    " workload TEXT NOT NULL, objective TEXT NOT NULL, cap_W REAL, decision_json TEXT,"
    " driver_version TEXT NOT NULL, regime_version TEXT NOT NULL, options_json TEXT);"
    "CREATE TABLE IF NOT EXISTS studies ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, started_at_utc TEXT NOT NULL, device TEXT NOT NULL,"
    " gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL, workload TEXT NOT NULL, regime TEXT,"
    " sweep_id INTEGER REFERENCES sweeps(id), decision_json TEXT, report_json TEXT,"
    " driver_version TEXT NOT NULL, regime_version TEXT NOT NULL, options_json TEXT);"
    "CREATE TABLE IF NOT EXISTS control_runs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, started_at_utc TEXT NOT NULL, device TEXT NOT NULL,"
    " gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL, workload TEXT NOT NULL,"
    " policy TEXT NOT NULL, report_json TEXT, driver_version TEXT NOT NULL,"
    " regime_version TEXT NOT NULL, options_json TEXT);";

std::string version_or_this(const Provenance& p) {
  return p.regime_version.empty() ? regime_version() : p.regime_version;
}

constexpr const char* kDecisionColumns =
    "id, made_at_utc, source, sweep_id, device, gpu_name, workload, objective, cap_W, "
    "decision_json, driver_version, regime_version, options_json";
constexpr const char* kStudyColumns =
    "id, started_at_utc, device, gpu_name, gpu_uuid, workload, regime, sweep_id, decision_json, "
    "report_json, driver_version, regime_version, options_json";
constexpr const char* kControlColumns =
    "id, started_at_utc, device, gpu_name, gpu_uuid, workload, policy, report_json, "
    "driver_version, regime_version, options_json";

Provenance read_provenance(Statement& s, int first) {
  Provenance p;
  p.driver_version = s.col_text(first);
  p.regime_version = s.col_text(first + 1);
  p.options = s.col_json(first + 2);
  return p;
}

}  // namespace

std::filesystem::path RunStore::default_path() { return state_dir() / "runs.sqlite"; }

std::filesystem::path RunStore::path_or_default(const std::string& db) {
  return db.empty() ? default_path() : std::filesystem::path(db);
}

RunStore::RunStore(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(ErrorKind::Io, "cannot open run database " + path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db_, kBusyTimeout_ms);  // another regime may be writing its run
  int version = 0;
  try {
    Statement v(db_, "PRAGMA user_version");
    if (v.step() == SQLITE_ROW) version = static_cast<int>(v.col_int(0));
  } catch (const Error&) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(ErrorKind::Parse, path.string() + " is not a Regime run database (not SQLite)");
  }
  if (version > kRunStoreSchemaVersion) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(ErrorKind::Parse, path.string() + " has run-database schema version " +
                                      std::to_string(version) + "; this regime reads up to " +
                                      std::to_string(kRunStoreSchemaVersion));
  }
  try {
    // WAL lets readers go on while one process writes; it stays set in the file. A file system
    // without shared memory (some network mounts) keeps the rollback journal, which is still
    // safe with the busy timeout, only slower under contention.
    use_wal();
    if (version < kRunStoreSchemaVersion || !has_column("sweeps", "driver_version")) migrate();
  } catch (const Error&) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

// Switching a rollback-journal file to WAL takes the exclusive lock. While another process opens
// the same old file (and holds a lock this one could deadlock with), SQLite answers BUSY at once
// instead of calling the busy handler, so the switch is tried again here, up to the same timeout.
void RunStore::use_wal() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeout_ms);
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL;", nullptr, nullptr, &err);
    std::string msg = err != nullptr ? err : "";
    sqlite3_free(err);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
      fail(msg.empty() ? sqlite3_errmsg(db_) : msg);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 1 + attempt)));
  }
}

bool RunStore::has_column(const char* table, const char* column) {
  Statement s(db_, (std::string("PRAGMA table_info(") + table + ")").c_str());
  while (s.step() == SQLITE_ROW)
    if (s.col_text(1) == column) return true;
  return false;
}

void RunStore::migrate() {
  // IMMEDIATE takes the write lock at once: of two processes opening an old file together, the
  // second waits, then finds it upgraded (the version is read again inside the transaction).
  exec("BEGIN IMMEDIATE;");
  int version = 0;
  {
    Statement v(db_, "PRAGMA user_version");
    if (v.step() == SQLITE_ROW) version = static_cast<int>(v.col_int(0));
  }
  std::string sql;
  if (version < 2)
    // Version 1 had the runs table only: the upgrade adds the sweeps table and keeps every run.
    sql += std::string(
               "CREATE TABLE IF NOT EXISTS runs ("
               " id INTEGER PRIMARY KEY AUTOINCREMENT,"
               " started_at_s REAL NOT NULL, started_at_utc TEXT NOT NULL,"
               " device TEXT NOT NULL, gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL,"
               " workload TEXT NOT NULL, options_json TEXT, status TEXT NOT NULL,"
               " exit_status INTEGER, trace_path TEXT NOT NULL, steps_path TEXT NOT NULL,"
               " regime TEXT, confidence REAL, measurement_json TEXT, report_json TEXT);") +
           kCreateSweeps;
  // By the columns, not the number alone: a file another build brought to this version number by
  // other steps still gets these.
  if (version < 3 || !has_column("sweeps", "driver_version")) sql += kSchema3;
  // Version 4 adds the LLM predictors' answer cache.
  if (version < 4) sql += kCreateLlmAnswers;
  if (!sql.empty() || version < kRunStoreSchemaVersion)
    sql +=
        "PRAGMA user_version = " + std::to_string(std::max(version, kRunStoreSchemaVersion)) + ";";
  exec((sql + "COMMIT;").c_str());
}

RunStore::~RunStore() { sqlite3_close(db_); }

void RunStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    fail(msg);
  }
}

void RunStore::fail(const std::string& what) {
  throw Error(ErrorKind::Io, "run database " + path_.string() + ": " + what);
}

int64_t RunStore::insert(const RunRecord& record) {
  Statement s(db_,
              "INSERT INTO runs (started_at_s, started_at_utc, device, gpu_name, gpu_uuid, "
              "workload, options_json, status, exit_status, trace_path, steps_path, regime, "
              "confidence, measurement_json, report_json, driver_version, regime_version) VALUES "
              "(?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
  bind_fields(s, record);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

void RunStore::update(const RunRecord& record) {
  Statement s(db_,
              "UPDATE runs SET started_at_s=?2, started_at_utc=?3, device=?4, gpu_name=?5, "
              "gpu_uuid=?6, workload=?7, options_json=?8, status=?9, exit_status=?10, "
              "trace_path=?11, steps_path=?12, regime=?13, confidence=?14, measurement_json=?15, "
              "report_json=?16, driver_version=?17, regime_version=?18 WHERE id=?1");
  s.integer(1, record.id);
  bind_fields(s, record);
  s.step();
  if (sqlite3_changes(db_) == 0)
    throw Error(ErrorKind::NotFound,
                "no run " + std::to_string(record.id) + " in " + path_.string());
}

std::optional<RunRecord> RunStore::get(int64_t id) {
  return get_row<RunRecord>(db_, kColumns, "runs", id, read_record);
}

std::vector<RunRecord> RunStore::list(size_t limit) {
  return list_rows<RunRecord>(db_, kColumns, "runs", limit, read_record);
}

int64_t RunStore::insert_sweep(const SweepRecord& r) {
  Statement s(db_,
              "INSERT INTO sweeps (started_at_utc, kind, device, gpu_name, gpu_uuid, workload, "
              "strategy, objective, default_limit_W, max_limit_W, table_csv, decision_json, "
              "report_json, driver_version, regime_version, options_json) VALUES (?1, ?2, ?3, ?4, "
              "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  s.text(1, r.started_at_utc);
  s.text(2, r.kind);
  s.text(3, r.device);
  s.text(4, r.gpu_name);
  s.text(5, r.gpu_uuid);
  s.text(6, r.workload);
  s.text(7, r.strategy);
  s.text(8, r.objective);
  s.real(9, r.default_limit_W);
  s.real(10, r.max_limit_W);
  s.text(11, r.table_csv);
  s.json(12, r.decision);
  s.json(13, r.report);
  s.text(14, r.provenance.driver_version);
  s.text(15, version_or_this(r.provenance));
  s.json(16, r.provenance.options);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::optional<SweepRecord> RunStore::get_sweep(int64_t id) {
  return get_row<SweepRecord>(db_, kSweepColumns, "sweeps", id, read_sweep);
}

std::vector<SweepRecord> RunStore::list_sweeps(size_t limit) {
  return list_rows<SweepRecord>(db_, kSweepColumns, "sweeps", limit, read_sweep);
}

std::optional<std::string> RunStore::find_llm_answer(const std::string& model,
                                                     const std::string& prompt) {
  Statement s(db_, "SELECT answer FROM llm_answers WHERE model=?1 AND prompt=?2");
  s.text(1, model);
  s.text(2, prompt);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  return s.col_text(0);
}

void RunStore::put_llm_answer(const std::string& model, const std::string& prompt,
                              const std::string& answer, const std::string& answered_at_utc) {
  Statement s(db_,
              "INSERT OR REPLACE INTO llm_answers (model, prompt, answer, answered_at_utc) "
              "VALUES (?1, ?2, ?3, ?4)");
  s.text(1, model);
  s.text(2, prompt);
  s.text(3, answer);
  s.text(4, answered_at_utc);
  s.step();
}

size_t RunStore::count_llm_answers() {
  Statement s(db_, "SELECT COUNT(*) FROM llm_answers");
  s.step();
  return static_cast<size_t>(s.col_int(0));
}

namespace {

DecisionRecord read_decision(Statement& s) {
  DecisionRecord r;
  r.id = s.col_int(0);
  r.made_at_utc = s.col_text(1);
  r.source = s.col_text(2);
  if (!s.is_null(3)) r.sweep_id = s.col_int(3);
  r.device = s.col_text(4);
  r.gpu_name = s.col_text(5);
  r.workload = s.col_text(6);
  r.objective = s.col_text(7);
  if (!s.is_null(8)) r.cap_W = s.col_real(8);
  r.decision = s.col_json(9);
  r.provenance = read_provenance(s, 10);
  return r;
}

StudyRecord read_study(Statement& s) {
  StudyRecord r;
  r.id = s.col_int(0);
  r.started_at_utc = s.col_text(1);
  r.device = s.col_text(2);
  r.gpu_name = s.col_text(3);
  r.gpu_uuid = s.col_text(4);
  r.workload = s.col_text(5);
  if (!s.is_null(6)) r.regime = s.col_text(6);
  if (!s.is_null(7)) r.sweep_id = s.col_int(7);
  r.decision = s.col_json(8);
  r.report = s.col_json(9);
  r.provenance = read_provenance(s, 10);
  return r;
}

ControlRunRecord read_control(Statement& s) {
  ControlRunRecord r;
  r.id = s.col_int(0);
  r.started_at_utc = s.col_text(1);
  r.device = s.col_text(2);
  r.gpu_name = s.col_text(3);
  r.gpu_uuid = s.col_text(4);
  r.workload = s.col_text(5);
  r.policy = s.col_text(6);
  r.report = s.col_json(7);
  r.provenance = read_provenance(s, 8);
  return r;
}

}  // namespace

int64_t RunStore::insert_decision(const DecisionRecord& r) {
  Statement s(db_,
              "INSERT INTO decisions (made_at_utc, source, sweep_id, device, gpu_name, workload, "
              "objective, cap_W, decision_json, driver_version, regime_version, options_json) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  s.text(1, r.made_at_utc);
  s.text(2, r.source);
  s.integer(3, r.sweep_id);
  s.text(4, r.device);
  s.text(5, r.gpu_name);
  s.text(6, r.workload);
  s.text(7, r.objective);
  s.real(8, r.cap_W);
  s.json(9, r.decision);
  s.text(10, r.provenance.driver_version);
  s.text(11, version_or_this(r.provenance));
  s.json(12, r.provenance.options);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::optional<DecisionRecord> RunStore::get_decision(int64_t id) {
  return get_row<DecisionRecord>(db_, kDecisionColumns, "decisions", id, read_decision);
}

std::vector<DecisionRecord> RunStore::list_decisions(size_t limit) {
  return list_rows<DecisionRecord>(db_, kDecisionColumns, "decisions", limit, read_decision);
}

int64_t RunStore::insert_study(const StudyRecord& r) {
  Statement s(db_,
              "INSERT INTO studies (started_at_utc, device, gpu_name, gpu_uuid, workload, regime, "
              "sweep_id, decision_json, report_json, driver_version, regime_version, "
              "options_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  s.text(1, r.started_at_utc);
  s.text(2, r.device);
  s.text(3, r.gpu_name);
  s.text(4, r.gpu_uuid);
  s.text(5, r.workload);
  r.regime ? s.text(6, *r.regime) : s.integer(6, std::nullopt);
  s.integer(7, r.sweep_id);
  s.json(8, r.decision);
  s.json(9, r.report);
  s.text(10, r.provenance.driver_version);
  s.text(11, version_or_this(r.provenance));
  s.json(12, r.provenance.options);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::optional<StudyRecord> RunStore::get_study(int64_t id) {
  return get_row<StudyRecord>(db_, kStudyColumns, "studies", id, read_study);
}

std::vector<StudyRecord> RunStore::list_studies(size_t limit) {
  return list_rows<StudyRecord>(db_, kStudyColumns, "studies", limit, read_study);
}

int64_t RunStore::insert_control_run(const ControlRunRecord& r) {
  Statement s(db_,
              "INSERT INTO control_runs (started_at_utc, device, gpu_name, gpu_uuid, workload, "
              "policy, report_json, driver_version, regime_version, options_json) VALUES (?1, "
              "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  s.text(1, r.started_at_utc);
  s.text(2, r.device);
  s.text(3, r.gpu_name);
  s.text(4, r.gpu_uuid);
  s.text(5, r.workload);
  s.text(6, r.policy);
  s.json(7, r.report);
  s.text(8, r.provenance.driver_version);
  s.text(9, version_or_this(r.provenance));
  s.json(10, r.provenance.options);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::optional<ControlRunRecord> RunStore::get_control_run(int64_t id) {
  return get_row<ControlRunRecord>(db_, kControlColumns, "control_runs", id, read_control);
}

std::vector<ControlRunRecord> RunStore::list_control_runs(size_t limit) {
  return list_rows<ControlRunRecord>(db_, kControlColumns, "control_runs", limit, read_control);
}

}  // namespace regime
