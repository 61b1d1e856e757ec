#pragma once
// The run database: one SQLite file (default state_dir()/runs.sqlite), or a MariaDB server that
// every node of a cluster shares (`mariadb://...`, store/db_uri.hpp), with a row per probe, per
// sweep (or study's sweep), per decision, per study and per controller run, each with what it ran
// on (GPU, driver), the workload, the Regime version and the options. A probe is recorded when it
// starts (so a crash still leaves its trace findable) and completed when it ends; a sweep is
// recorded with what it measured, as a sweep table, so that it can be decided again under another
// objective without running it again. One schema and one versioned migration for both backends
// (SQLite keeps the version in PRAGMA user_version, MariaDB in a regime_schema table); an older
// store is upgraded in place, a newer one refused. Several regime processes may write at once: the
// file is in WAL mode (readers never wait for a writer) and a writer waits up to kBusyTimeout_ms
// for another's transaction to end; the server serialises them itself.
//
// A server store never blocks its caller for long (store/mariadb_db.hpp gives the timeouts): when
// the server cannot be reached, the store goes offline for the rest of its life (and stores the
// same process opens in the next 30 s start offline, without waiting), writes go to an
// on-disk queue in the node's state folder (state_dir()/server-store/HOST_PORT_DB/queue), each with
// a unique id made here so that sending it twice keeps one row, and the next store that reaches
// the server sends them first; reads of sweeps and decisions answer from the rows last read.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/database_location.hpp"
#include "store/rows.hpp"

namespace regime {

class Outbox;
class JobStore;

inline constexpr int kRunStoreSchemaVersion = 6;
inline constexpr int kBusyTimeout_ms = 30000;

// What a stored result was made with (schema 3). Left empty in rows kept by older versions.
struct Provenance {
  std::string driver_version;                         // the GPU driver ("sim" for a simulated GPU)
  std::string regime_version;                         // regime_version() of the build that made it
  nlohmann::json options = nlohmann::json::object();  // the command's options
  std::string host;  // schema 6: the machine it was made on (this one's name when left empty)
};

struct RunRecord {
  int64_t id = 0;              // assigned by the store
  double started_at_s = 0;     // Unix seconds (0 for simulated runs: their clock starts at 0)
  std::string started_at_utc;  // ISO 8601, wall time the record was made
  std::string device;          // URI, e.g. "nvml:0", "sim:h200"
  std::string gpu_name;
  std::string gpu_uuid;
  std::string workload;                               // "sim:resnet50" or the command line
  nlohmann::json options = nlohmann::json::object();  // how it was run (seconds, sample_ms, ...)
  std::string status = "running";                     // running | done | failed
  std::optional<int> exit_status;                     // of the command
  std::string trace_path;
  std::string steps_path;
  std::optional<std::string> regime;
  std::optional<double> confidence;
  nlohmann::json measurement;  // the measurement JSON (null until done)
  nlohmann::json report;       // the whole report JSON (null until done)
  std::string driver_version;  // schema 3 (options and the version: `options`, regime_version)
  std::string regime_version;
  std::string host;  // schema 6, as Provenance::host
};

// One sweep (`regime sweep`) or the sweep of a study (`regime study`).
struct SweepRecord {
  int64_t id = 0;  // assigned by the store
  std::string started_at_utc;
  std::string kind = "sweep";  // sweep | study
  std::string device;
  std::string gpu_name;
  std::string gpu_uuid;
  std::string workload;
  std::string strategy;   // as run
  std::string objective;  // as decided then
  double default_limit_W = 0;
  double max_limit_W = 0;
  std::string table_csv;  // every measured cap as a sweep table (docs/contracts.md)
  nlohmann::json decision;
  nlohmann::json report;  // the command's whole JSON
  Provenance provenance;  // schema 3
  // Set on reading: why this row cannot be decided from (decision_json that is not JSON, a column
  // of the wrong kind); empty for a row that reads whole. Never stored.
  std::string unreadable;
};

// A decision: made by a sweep or a study, or made again from a kept sweep (`recommend --run`).
struct DecisionRecord {
  int64_t id = 0;
  std::string made_at_utc;
  std::string source;               // "sweep" | "study" | "recommend"
  std::optional<int64_t> sweep_id;  // the sweep it decides
  std::string device, gpu_name, workload;
  std::string objective;
  std::optional<double> cap_W;  // empty: keep the default
  nlohmann::json decision;      // plan::to_json(Decision)
  Provenance provenance;
};

// A study (`regime study`): its regime, its decision, the sweep it ran (if any).
struct StudyRecord {
  int64_t id = 0;
  std::string started_at_utc;
  std::string device, gpu_name, gpu_uuid, workload;
  std::optional<std::string> regime;
  std::optional<int64_t> sweep_id;
  nlohmann::json decision;
  nlohmann::json report;  // the study's whole JSON
  Provenance provenance;
};

// A controller run (`regime control`).
struct ControlRunRecord {
  int64_t id = 0;
  std::string started_at_utc;
  std::string device, gpu_name, gpu_uuid, workload;
  std::string policy;
  nlohmann::json report;  // the command's whole JSON
  Provenance provenance;
};

class RunStore {
 public:
  // Opens or creates the database (and its directory), or connects to the server a mariadb://
  // URI names. Error Io when it cannot (not for a server that cannot be reached: offline() then),
  // Parse when the file is not a Regime run database or has a newer schema, InvalidArgument for a
  // malformed URI, NoPermission for a credentials file others may read.
  explicit RunStore(const DatabaseLocation& where);
  // The store `path` names as --db would (DatabaseLocation::from_text).
  explicit RunStore(const std::filesystem::path& path);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  static std::filesystem::path default_path();  // state_dir()/runs.sqlite
  // The file, or the server's URI (without a password, which it never holds).
  const std::filesystem::path& path() const { return path_; }
  // Where it is, for people: the file's absolute path, or the server's URI.
  std::string location() const;
  bool is_server() const { return outbox_ != nullptr; }
  // A server store that could not reach its server: writes are queued, reads come from the cache.
  // Ids it hands out meanwhile are negative and stand only for this process's rows.
  bool offline() const { return offline_; }
  // Writes waiting in this node's queue for the server (0 for a file).
  size_t queued_writes() const;
  // Forgets which servers this process found unreachable, so that the next store opened tries
  // again at once (a long-running process told the server is back; tests).
  static void retry_servers_now();
  // Sends the queue now (done on open as well); how many were sent. 0 when offline.
  size_t send_queued();

  // Inserts the record (its id is ignored) and returns the new id (negative when queued).
  int64_t insert(const RunRecord& record);
  // Rewrites every field of the run with record.id; Error NotFound if there is none.
  void update(const RunRecord& record);
  std::optional<RunRecord> get(int64_t id);
  // Newest first; at most `limit` rows (0: all).
  std::vector<RunRecord> list(size_t limit = 0);

  int64_t insert_sweep(const SweepRecord& record);
  std::optional<SweepRecord> get_sweep(int64_t id);
  std::vector<SweepRecord> list_sweeps(size_t limit = 0);
  // The newest sweep of one GPU model and workload (what `--gpu-power=auto` decides from), by a
  // query for that pair alone. A server store out of reach answers from this node's copy of the
  // last answer for the pair, else of the last list_sweeps(); with neither, Error Io. A row that
  // cannot be read whole comes back with its id (where readable), the pair asked for and
  // `unreadable` saying why, never as an error: a job's prolog must not fail on stored data.
  std::optional<SweepRecord> newest_sweep_of(const std::string& gpu_name,
                                             const std::string& workload);

  // The cache of LLM predictors' answers (src/predict/llm.hpp), keyed by model and whole prompt.
  std::optional<std::string> find_llm_answer(const std::string& model, const std::string& prompt);
  void put_llm_answer(const std::string& model, const std::string& prompt,
                      const std::string& answer, const std::string& answered_at_utc);
  size_t count_llm_answers();
  int64_t insert_decision(const DecisionRecord& record);
  std::optional<DecisionRecord> get_decision(int64_t id);
  std::vector<DecisionRecord> list_decisions(size_t limit = 0);  // newest first
  int64_t insert_study(const StudyRecord& record);
  std::optional<StudyRecord> get_study(int64_t id);
  std::vector<StudyRecord> list_studies(size_t limit = 0);
  int64_t insert_control_run(const ControlRunRecord& record);
  std::optional<ControlRunRecord> get_control_run(int64_t id);
  std::vector<ControlRunRecord> list_control_runs(size_t limit = 0);

 private:
  friend class JobStore;
  bool migration_due();
  void migrate();  // to kRunStoreSchemaVersion, one process at a time
  template <class R>
  int64_t insert_row(const rows::Table<R>& table, const R& record);
  // A decision's or a study's row, whose sweep may still be queued (a provisional sweep_id).
  template <class R>
  int64_t insert_after_sweep(const rows::Table<R>& table, const R& record, size_t sweep_param);
  template <class R>
  std::optional<R> get_row(const rows::Table<R>& table, int64_t id);
  // Newest first; rows of a full list (limit 0) of a server store are cached when `cached`.
  template <class R>
  std::vector<R> list_rows(const rows::Table<R>& table, size_t limit, bool cached);
  // A write, its tokens applied: sent now, or queued when the server cannot be reached. `refs`:
  // parameter index -> {"table", "uid"} of a queued row whose real id the parameter needs.
  void write(const std::string& statement, const sql::Params& params,
             const nlohmann::json& refs = nlohmann::json::object());
  // A read, its tokens applied; from the cache `cache_name` when the server cannot be reached
  // (Error Io when there is none).
  std::vector<sql::Row> read(const std::string& statement, const sql::Params& params,
                             const std::string& cache_name = "");
  void go_offline();
  // The parameter of a row id that may be provisional: the id, or NULL with a reference to the
  // queued row's uid in `refs`.
  sql::Value id_param(std::optional<int64_t> id, size_t index, nlohmann::json& refs) const;

  std::filesystem::path path_;
  std::unique_ptr<sql::Connection> db_;
  std::unique_ptr<Outbox> outbox_;  // server stores only
  bool offline_ = false;
  int64_t next_provisional_id_ = -1;
  std::map<int64_t, std::pair<std::string, std::string>> provisional_;  // id -> {table, uid}
};

}  // namespace regime
