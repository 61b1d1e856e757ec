#include "store/run_store.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"
#include "common/version.hpp"
#include "store/db_uri.hpp"
#include "store/mariadb_db.hpp"
#include "store/outbox.hpp"
#include "store/sqlite_db.hpp"

namespace regime {

namespace {

using rows::field;

std::string version_or_this(const std::string& v) { return v.empty() ? regime_version() : v; }

std::string host_or_this(const std::string& h) {
  if (!h.empty()) return h;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// regime_version: the build's own when the record names none.
template <class R>
rows::Column<R> version_field(std::string R::*m) {
  return {"regime_version", [m](const R& r) { return sql::Value{version_or_this(r.*m)}; },
          [m](R& r, const sql::Value& v) { rows::from_value(v, r.*m); }};
}
template <class R>
std::vector<rows::Column<R>> provenance_fields() {
  return {field("driver_version", &R::provenance, &Provenance::driver_version),
          {"regime_version",
           [](const R& r) { return sql::Value{version_or_this(r.provenance.regime_version)}; },
           [](R& r, const sql::Value& v) { rows::from_value(v, r.provenance.regime_version); }},
          field("options_json", &R::provenance, &Provenance::options),
          {"host", [](const R& r) { return sql::Value{host_or_this(r.provenance.host)}; },
           [](R& r, const sql::Value& v) { rows::from_value(v, r.provenance.host); }}};
}
template <class R>
rows::Table<R> with_provenance(const char* name, std::vector<rows::Column<R>> columns) {
  for (auto& c : provenance_fields<R>()) columns.push_back(std::move(c));
  return {name, std::move(columns)};
}

const rows::Table<RunRecord>& runs_table() {
  static const rows::Table<RunRecord> t{
      "runs",
      {field("started_at_s", &RunRecord::started_at_s),
       field("started_at_utc", &RunRecord::started_at_utc),
       field("device", &RunRecord::device),
       field("gpu_name", &RunRecord::gpu_name),
       field("gpu_uuid", &RunRecord::gpu_uuid),
       field("workload", &RunRecord::workload),
       field("options_json", &RunRecord::options),
       field("status", &RunRecord::status),
       field("exit_status", &RunRecord::exit_status),
       field("trace_path", &RunRecord::trace_path),
       field("steps_path", &RunRecord::steps_path),
       field("regime", &RunRecord::regime),
       field("confidence", &RunRecord::confidence),
       field("measurement_json", &RunRecord::measurement),
       field("report_json", &RunRecord::report),
       field("driver_version", &RunRecord::driver_version),
       version_field(&RunRecord::regime_version),
       {"host", [](const RunRecord& r) { return sql::Value{host_or_this(r.host)}; },
        [](RunRecord& r, const sql::Value& v) { rows::from_value(v, r.host); }}}};
  return t;
}

// A sweep's decision_json as stored: text that is not JSON is kept as a reason, not as a null
// that would read like a sweep that decided nothing.
rows::Column<SweepRecord> decision_field() {
  return {"decision_json", [](const SweepRecord& r) { return rows::to_value(r.decision); },
          [](SweepRecord& r, const sql::Value& v) {
            r.decision = nullptr;
            if (sql::is_null(v)) return;
            const std::string text = sql::as_text(v);
            if (json_nesting_depth(text) > kMaxJsonDepth) {
              r.unreadable =
                  fmt::format("its decision_json nests deeper than {} levels", kMaxJsonDepth);
              return;
            }
            r.decision = parse_json_or_discarded(text);
            if (!r.decision.is_discarded()) return;
            r.decision = nullptr;
            r.unreadable = "its decision_json is not JSON text";
          }};
}

const rows::Table<SweepRecord>& sweeps_table() {
  static const rows::Table<SweepRecord> t = with_provenance<SweepRecord>(
      "sweeps",
      {field("started_at_utc", &SweepRecord::started_at_utc), field("kind", &SweepRecord::kind),
       field("device", &SweepRecord::device), field("gpu_name", &SweepRecord::gpu_name),
       field("gpu_uuid", &SweepRecord::gpu_uuid), field("workload", &SweepRecord::workload),
       field("strategy", &SweepRecord::strategy), field("objective", &SweepRecord::objective),
       field("default_limit_W", &SweepRecord::default_limit_W),
       field("max_limit_W", &SweepRecord::max_limit_W), field("table_csv", &SweepRecord::table_csv),
       decision_field(), field("report_json", &SweepRecord::report)});
  return t;
}

const rows::Table<DecisionRecord>& decisions_table() {
  static const rows::Table<DecisionRecord> t = with_provenance<DecisionRecord>(
      "decisions",
      {field("made_at_utc", &DecisionRecord::made_at_utc), field("source", &DecisionRecord::source),
       field("sweep_id", &DecisionRecord::sweep_id), field("device", &DecisionRecord::device),
       field("gpu_name", &DecisionRecord::gpu_name), field("workload", &DecisionRecord::workload),
       field("objective", &DecisionRecord::objective), field("cap_W", &DecisionRecord::cap_W),
       field("decision_json", &DecisionRecord::decision)});
  return t;
}

const rows::Table<StudyRecord>& studies_table() {
  static const rows::Table<StudyRecord> t = with_provenance<StudyRecord>(
      "studies",
      {field("started_at_utc", &StudyRecord::started_at_utc), field("device", &StudyRecord::device),
       field("gpu_name", &StudyRecord::gpu_name), field("gpu_uuid", &StudyRecord::gpu_uuid),
       field("workload", &StudyRecord::workload), field("regime", &StudyRecord::regime),
       field("sweep_id", &StudyRecord::sweep_id), field("decision_json", &StudyRecord::decision),
       field("report_json", &StudyRecord::report)});
  return t;
}

const rows::Table<ControlRunRecord>& control_runs_table() {
  static const rows::Table<ControlRunRecord> t = with_provenance<ControlRunRecord>(
      "control_runs",
      {field("started_at_utc", &ControlRunRecord::started_at_utc),
       field("device", &ControlRunRecord::device), field("gpu_name", &ControlRunRecord::gpu_name),
       field("gpu_uuid", &ControlRunRecord::gpu_uuid),
       field("workload", &ControlRunRecord::workload), field("policy", &ControlRunRecord::policy),
       field("report_json", &ControlRunRecord::report)});
  return t;
}

// One step of the schema: the version it brings the store to, and its statements in both
// dialects' tokens. Every statement is idempotent where the backend allows, so that a step cut
// short on MariaDB (where DDL is not transactional) is finished by the next opener.
struct SchemaStep {
  int version;
  std::vector<const char*> statements;
};

const std::vector<SchemaStep>& schema_steps() {
  static const std::vector<SchemaStep> steps{
      {1,
       {"CREATE TABLE IF NOT EXISTS runs (id {id}, started_at_s {real} NOT NULL,"
        " started_at_utc {text} NOT NULL, device {text} NOT NULL, gpu_name {text} NOT NULL,"
        " gpu_uuid {text} NOT NULL, workload {text} NOT NULL, options_json {text},"
        " status {text} NOT NULL, exit_status {int}, trace_path {text} NOT NULL,"
        " steps_path {text} NOT NULL, regime {text}, confidence {real}, measurement_json {text},"
        " report_json {text})"}},
      // Version 2: the sweeps, every run kept.
      {2,
       {"CREATE TABLE IF NOT EXISTS sweeps (id {id}, started_at_utc {text} NOT NULL,"
        " kind {text} NOT NULL, device {text} NOT NULL, gpu_name {text} NOT NULL,"
        " gpu_uuid {text} NOT NULL, workload {text} NOT NULL, strategy {text} NOT NULL,"
        " objective {text} NOT NULL, default_limit_W {real} NOT NULL,"
        " max_limit_W {real} NOT NULL, table_csv {text} NOT NULL, decision_json {text},"
        " report_json {text})"}},
      // Version 3: what every result was made with; decisions, studies and controller runs.
      {3,
       {"ALTER TABLE runs {add_column} driver_version {text} NOT NULL DEFAULT ''",
        "ALTER TABLE runs {add_column} regime_version {text} NOT NULL DEFAULT ''",
        "ALTER TABLE sweeps {add_column} driver_version {text} NOT NULL DEFAULT ''",
        "ALTER TABLE sweeps {add_column} regime_version {text} NOT NULL DEFAULT ''",
        "ALTER TABLE sweeps {add_column} options_json {text}",
        "CREATE TABLE IF NOT EXISTS decisions (id {id}, made_at_utc {text} NOT NULL,"
        " source {text} NOT NULL, sweep_id {int}{sweep_ref}, device {text} NOT NULL,"
        " gpu_name {text} NOT NULL, workload {text} NOT NULL, objective {text} NOT NULL,"
        " cap_W {real}, decision_json {text}, driver_version {text} NOT NULL,"
        " regime_version {text} NOT NULL, options_json {text})",
        "CREATE TABLE IF NOT EXISTS studies (id {id}, started_at_utc {text} NOT NULL,"
        " device {text} NOT NULL, gpu_name {text} NOT NULL, gpu_uuid {text} NOT NULL,"
        " workload {text} NOT NULL, regime {text}, sweep_id {int}{sweep_ref},"
        " decision_json {text}, report_json {text}, driver_version {text} NOT NULL,"
        " regime_version {text} NOT NULL, options_json {text})",
        "CREATE TABLE IF NOT EXISTS control_runs (id {id}, started_at_utc {text} NOT NULL,"
        " device {text} NOT NULL, gpu_name {text} NOT NULL, gpu_uuid {text} NOT NULL,"
        " workload {text} NOT NULL, policy {text} NOT NULL, report_json {text},"
        " driver_version {text} NOT NULL, regime_version {text} NOT NULL, options_json {text})"}},
      // Version 4: the LLM predictors' answers, keyed by the model and the whole prompt: what was
      // asked and what came back, never the endpoint's key.
      {4,
       {"CREATE TABLE IF NOT EXISTS llm_answers (model {key} NOT NULL, prompt {text} NOT NULL,"
        " answer {text} NOT NULL, answered_at_utc {text} NOT NULL{answer_key})"}},
      // Version 5: scheduler jobs (created unversioned by earlier builds) and a unique id per row
      // made by the writer, so that a write sent again keeps one row.
      {5,
       {"CREATE TABLE IF NOT EXISTS jobs (job_id {key} NOT NULL, node {key} NOT NULL,"
        " status {text} NOT NULL, record_json {text} NOT NULL, PRIMARY KEY (job_id, node))",
        "ALTER TABLE runs {add_column} uid {key}", "ALTER TABLE sweeps {add_column} uid {key}",
        "ALTER TABLE decisions {add_column} uid {key}",
        "ALTER TABLE studies {add_column} uid {key}",
        "ALTER TABLE control_runs {add_column} uid {key}",
        "CREATE UNIQUE INDEX IF NOT EXISTS runs_uid ON runs (uid)",
        "CREATE UNIQUE INDEX IF NOT EXISTS sweeps_uid ON sweeps (uid)",
        "CREATE UNIQUE INDEX IF NOT EXISTS decisions_uid ON decisions (uid)",
        "CREATE UNIQUE INDEX IF NOT EXISTS studies_uid ON studies (uid)",
        "CREATE UNIQUE INDEX IF NOT EXISTS control_runs_uid ON control_runs (uid)"}},
      // Version 6: the machine each row was made on, for a store that every node shares.
      {6,
       {"ALTER TABLE runs {add_column} host {key} NOT NULL DEFAULT ''",
        "ALTER TABLE sweeps {add_column} host {key} NOT NULL DEFAULT ''",
        "ALTER TABLE decisions {add_column} host {key} NOT NULL DEFAULT ''",
        "ALTER TABLE studies {add_column} host {key} NOT NULL DEFAULT ''",
        "ALTER TABLE control_runs {add_column} host {key} NOT NULL DEFAULT ''"}},
  };
  return steps;
}

// Whether `step` is due on a store at `version`. By the columns, not the number alone, for the
// steps that add columns: a file another build brought to this version number by other steps
// still gets them.
bool step_due(const SchemaStep& step, int version, sql::Connection& db) {
  if (version < step.version) return true;
  if (step.version == 3) return !db.has_column("sweeps", "driver_version");
  if (step.version == 5) return !db.has_column("runs", "uid");
  if (step.version == 6) return !db.has_column("runs", "host");
  return false;
}

// Whether `statement` adds a column the table has already (SQLite's ALTER TABLE cannot say
// IF NOT EXISTS), so that a step is safe to run again.
bool column_exists(std::string_view statement, sql::Connection& db) {
  constexpr std::string_view kAlter = "ALTER TABLE ", kAdd = " {add_column} ";
  const size_t add = statement.find(kAdd);
  if (statement.rfind(kAlter, 0) != 0 || add == std::string_view::npos) return false;
  const std::string table(statement.substr(kAlter.size(), add - kAlter.size()));
  const std::string_view rest = statement.substr(add + kAdd.size());
  return db.has_column(table, std::string(rest.substr(0, rest.find(' '))));
}

// Servers this process found unreachable, and when: a second store opened soon after (a job's
// prolog opens the jobs and the decisions) does not wait on the same server again.
constexpr auto kUnreachableMemory = std::chrono::seconds(30);
std::map<std::string, std::chrono::steady_clock::time_point>& unreachable_since() {
  static std::map<std::string, std::chrono::steady_clock::time_point> servers;
  return servers;
}

std::filesystem::path server_spool(const DbUri& uri) {
  std::string name = uri.host + "_" + std::to_string(uri.port) + "_" + uri.database;
  for (char& c : name)
    if (c == '/' || c == ' ') c = '_';
  return state_dir() / "server-store" / name;
}

}  // namespace

std::filesystem::path RunStore::default_path() { return state_dir() / "runs.sqlite"; }

RunStore::RunStore(const std::filesystem::path& path)
    : RunStore(DatabaseLocation::from_text(path.string())) {}

RunStore::RunStore(const DatabaseLocation& where) : path_(where.path()) {
  const std::optional<DbUri>& uri = where.server();
  if (!uri) {
    db_ = sql::open_sqlite(path_);
    if (migration_due()) migrate();
    return;
  }
  path_ = uri->display();
  outbox_ = std::make_unique<Outbox>(server_spool(*uri));
  auto known = unreachable_since().find(path_.string());
  if (known != unreachable_since().end() &&
      std::chrono::steady_clock::now() - known->second < kUnreachableMemory) {
    offline_ = true;
    return;
  }
  try {
    db_ = sql::open_mariadb(*uri);
    if (migration_due()) migrate();
    outbox_->send(*db_);
  } catch (const sql::Unreachable&) {
    go_offline();
  }
}

RunStore::~RunStore() = default;

std::string RunStore::location() const {
  return is_server() ? path_.string() : std::filesystem::absolute(path_).string();
}

void RunStore::retry_servers_now() { unreachable_since().clear(); }

void RunStore::go_offline() {
  unreachable_since()[path_.string()] = std::chrono::steady_clock::now();
  offline_ = true;
  db_.reset();
}

size_t RunStore::queued_writes() const { return outbox_ ? outbox_->size() : 0; }

size_t RunStore::send_queued() {
  if (!outbox_ || offline_) return 0;
  try {
    return outbox_->send(*db_);
  } catch (const sql::Unreachable&) {
    go_offline();
    return 0;
  }
}

bool RunStore::migration_due() {
  const int version = db_->schema_version();
  if (version > kRunStoreSchemaVersion) return true;  // refused inside, under the lock
  return std::any_of(schema_steps().begin(), schema_steps().end(),
                     [&](const SchemaStep& step) { return step_due(step, version, *db_); });
}

void RunStore::migrate() {
  sql::Connection& db = *db_;
  db.begin_migration();
  bool ok = false;
  try {
    const int version = db.schema_version();
    if (version > kRunStoreSchemaVersion)
      throw Error(ErrorKind::Parse, path_.string() + " has run-database schema version " +
                                        std::to_string(version) + "; this regime reads up to " +
                                        std::to_string(kRunStoreSchemaVersion));
    bool changed = false;
    for (const SchemaStep& step : schema_steps()) {
      if (!step_due(step, version, db)) continue;
      for (const char* statement : step.statements)
        if (!column_exists(statement, db)) db.query(sql::apply_dialect(statement, db.dialect()));
      changed = true;
    }
    if (changed || version < kRunStoreSchemaVersion)
      db.set_schema_version(std::max(version, kRunStoreSchemaVersion));
    ok = true;
  } catch (...) {
    db.end_migration(false);
    throw;
  }
  db.end_migration(ok);
}

void RunStore::write(const std::string& statement, const sql::Params& params,
                     const nlohmann::json& refs) {
  if (!offline_) {
    try {
      if (refs.empty()) {
        db_->query(sql::apply_dialect(statement, db_->dialect()), params);
        return;
      }
    } catch (const sql::Unreachable&) {
      go_offline();
    }
  }
  if (!outbox_) throw Error(ErrorKind::Internal, "a file store has no queue");
  outbox_->push(sql::apply_dialect(statement, sql::kMariaDb), params, refs);
}

std::vector<sql::Row> RunStore::read(const std::string& statement, const sql::Params& params,
                                     const std::string& cache_name) {
  if (!offline_) {
    try {
      auto rows = db_->query(sql::apply_dialect(statement, db_->dialect()), params);
      if (outbox_ && !cache_name.empty()) outbox_->cache(cache_name, rows);
      return rows;
    } catch (const sql::Unreachable&) {
      go_offline();
    }
  }
  if (!cache_name.empty())
    if (auto rows = outbox_->cached(cache_name)) return *rows;
  throw Error(ErrorKind::Io, "run store " + path_.string() +
                                 " cannot be reached and this node has no copy of what was "
                                 "asked; writes are queued in " +
                                 outbox_->dir().string());
}

sql::Value RunStore::id_param(std::optional<int64_t> id, size_t index, nlohmann::json& refs) const {
  if (!id) return {};
  auto it = provisional_.find(*id);
  if (it == provisional_.end()) return *id;
  refs[std::to_string(index)] = {{"table", it->second.first}, {"uid", it->second.second}};
  return {};
}

template <class R>
int64_t RunStore::insert_row(const rows::Table<R>& table, const R& record) {
  const std::string uid = new_row_uid();
  const sql::Params params = table.insert_params(record, uid);
  if (!offline_) {
    try {
      db_->query(sql::apply_dialect(table.insert_sql(), db_->dialect()), params);
      return db_->last_insert_id();
    } catch (const sql::Unreachable&) {
      go_offline();
    }
  }
  write(table.insert_sql(), params);
  const int64_t id = next_provisional_id_--;
  provisional_[id] = {table.name, uid};
  return id;
}

template <class R>
std::optional<R> RunStore::get_row(const rows::Table<R>& table, int64_t id) {
  auto rows = read(table.select_sql() + " WHERE id = ?", {id});
  if (rows.empty()) return std::nullopt;
  return table.read(rows[0]);
}

template <class R>
std::vector<R> RunStore::list_rows(const rows::Table<R>& table, size_t limit, bool cached) {
  std::string statement = table.select_sql() + " ORDER BY id DESC";
  if (limit > 0) statement += " LIMIT " + std::to_string(limit);
  auto rows = read(statement, {}, cached && limit == 0 ? table.name : "");
  std::vector<R> out;
  for (const auto& row : rows) {
    if (limit > 0 && out.size() == limit) break;
    out.push_back(table.read(row));
  }
  return out;
}

int64_t RunStore::insert(const RunRecord& record) { return insert_row(runs_table(), record); }

void RunStore::update(const RunRecord& record) {
  const auto& t = runs_table();
  if (auto it = provisional_.find(record.id); it != provisional_.end()) {
    write(t.update_sql("uid"), t.update_params(record, it->second.second));
    return;
  }
  write(t.update_sql("id"), t.update_params(record, record.id));
  if (!offline_ && db_->changes() == 0 && !get(record.id))
    throw Error(ErrorKind::NotFound,
                "no run " + std::to_string(record.id) + " in " + path_.string());
}

std::optional<RunRecord> RunStore::get(int64_t id) { return get_row(runs_table(), id); }

std::vector<RunRecord> RunStore::list(size_t limit) {
  return list_rows(runs_table(), limit, false);
}

int64_t RunStore::insert_sweep(const SweepRecord& r) { return insert_row(sweeps_table(), r); }

std::optional<SweepRecord> RunStore::get_sweep(int64_t id) { return get_row(sweeps_table(), id); }

std::vector<SweepRecord> RunStore::list_sweeps(size_t limit) {
  return list_rows(sweeps_table(), limit, true);
}

namespace {
// The row, or what can be said of it: its id where that reads, the pair it was asked for, and why
// the rest does not read.
SweepRecord readable_or_why(const rows::Table<SweepRecord>& t, const sql::Row& row,
                            const std::string& gpu_name, const std::string& workload) {
  try {
    return t.read(row);
  } catch (const Error& e) {
    SweepRecord s;
    try {
      s.id = row.empty() ? 0 : sql::as_int(row.front());
    } catch (const Error&) {  // an id that does not read either: 0, "no id"
    }
    s.gpu_name = gpu_name;
    s.workload = workload;
    s.unreadable = e.what();
    return s;
  }
}

// Whether a row of the node's copy of every sweep is one of this GPU model and workload, by those
// two columns alone (the rest of it may not read).
bool row_is_of(const rows::Table<SweepRecord>& t, const sql::Row& row, const std::string& gpu_name,
               const std::string& workload) {
  auto text_of = [&](std::string_view column) -> std::string {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (column == t.columns[i].name && i + 1 < row.size()) return sql::as_text(row[i + 1]);
    return {};
  };
  return text_of("gpu_name") == gpu_name && text_of("workload") == workload;
}

// A file name for one GPU model and workload in the node's copy of reads (FNV-1a, 64 bits).
std::string pair_cache_name(const std::string& table, const std::string& gpu_name,
                            const std::string& workload) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : gpu_name + '\n' + workload) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{}-of-{:016x}", table, h);
}
}  // namespace

std::optional<SweepRecord> RunStore::newest_sweep_of(const std::string& gpu_name,
                                                     const std::string& workload) {
  const auto& t = sweeps_table();
  std::vector<sql::Row> rows;
  try {
    rows = read(t.select_sql() + " WHERE gpu_name = ? AND workload = ? ORDER BY id DESC LIMIT 1",
                {gpu_name, workload}, pair_cache_name(t.name, gpu_name, workload));
  } catch (const Error&) {
    // Out of reach with no copy of this pair's answer: the node's copy of every sweep, newest
    // first, holds it if it was kept when last read.
    const auto all = outbox_ ? outbox_->cached(t.name) : std::nullopt;
    if (!offline_ || !all) throw;
    for (const auto& row : *all)
      if (row_is_of(t, row, gpu_name, workload)) return readable_or_why(t, row, gpu_name, workload);
    return std::nullopt;
  }
  if (rows.empty()) return std::nullopt;
  return readable_or_why(t, rows.front(), gpu_name, workload);
}

std::optional<std::string> RunStore::find_llm_answer(const std::string& model,
                                                     const std::string& prompt) {
  auto rows =
      read("SELECT answer FROM llm_answers WHERE model = ? AND prompt = ?", {model, prompt});
  if (rows.empty()) return std::nullopt;
  return sql::as_text(rows[0].at(0));
}

void RunStore::put_llm_answer(const std::string& model, const std::string& prompt,
                              const std::string& answer, const std::string& answered_at_utc) {
  write("DELETE FROM llm_answers WHERE model = ? AND prompt = ?", {model, prompt});
  write("INSERT INTO llm_answers (model, prompt, answer, answered_at_utc) VALUES (?, ?, ?, ?)",
        {model, prompt, answer, answered_at_utc});
}

size_t RunStore::count_llm_answers() {
  auto rows = read("SELECT COUNT(*) FROM llm_answers", {});
  return static_cast<size_t>(sql::as_int(rows.at(0).at(0)));
}

template <class R>
int64_t RunStore::insert_after_sweep(const rows::Table<R>& table, const R& r, size_t sweep_param) {
  if (provisional_.count(r.sweep_id.value_or(0)) == 0) return insert_row(table, r);
  // Its sweep is still queued: the row follows it, and takes the sweep's id when sent.
  const std::string uid = new_row_uid();
  sql::Params params = table.insert_params(r, uid);
  nlohmann::json refs = nlohmann::json::object();
  params.at(sweep_param) = id_param(r.sweep_id, sweep_param, refs);
  write(table.insert_sql(), params, refs);
  const int64_t id = next_provisional_id_--;
  provisional_[id] = {table.name, uid};
  return id;
}

// The sweep_id parameter: after the uid, the 3rd column of decisions and the 7th of studies.
int64_t RunStore::insert_decision(const DecisionRecord& r) {
  return insert_after_sweep(decisions_table(), r, 1 + 2);
}

std::optional<DecisionRecord> RunStore::get_decision(int64_t id) {
  return get_row(decisions_table(), id);
}

std::vector<DecisionRecord> RunStore::list_decisions(size_t limit) {
  return list_rows(decisions_table(), limit, true);
}

int64_t RunStore::insert_study(const StudyRecord& r) {
  return insert_after_sweep(studies_table(), r, 1 + 6);
}

std::optional<StudyRecord> RunStore::get_study(int64_t id) { return get_row(studies_table(), id); }

std::vector<StudyRecord> RunStore::list_studies(size_t limit) {
  return list_rows(studies_table(), limit, false);
}

int64_t RunStore::insert_control_run(const ControlRunRecord& r) {
  return insert_row(control_runs_table(), r);
}

std::optional<ControlRunRecord> RunStore::get_control_run(int64_t id) {
  return get_row(control_runs_table(), id);
}

std::vector<ControlRunRecord> RunStore::list_control_runs(size_t limit) {
  return list_rows(control_runs_table(), limit, false);
}

}  // namespace regime
