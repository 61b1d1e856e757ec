#include "store/sqlite_db.hpp"

#include <fmt/core.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/files.hpp"

namespace regime::sql {

int sqlite_busy_timeout_ms() {
  const char* text = std::getenv("REGIME_DB_BUSY_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return kSqliteBusyTimeout_ms;
  double s = 0;
  const char* end = text + std::strlen(text);
  auto [at, ec] = std::from_chars(text, end, s);
  if (ec != std::errc() || at != end || !(s >= 0.001 && s <= 3600))
    throw Error(ErrorKind::InvalidArgument,
                std::string("REGIME_DB_BUSY_TIMEOUT_S=") + text +
                    ": give the seconds a writer waits for another's lock, 0.001 to 3600");
  return static_cast<int>(s * 1000 + 0.5);
}

std::string sqlite_failure(const std::string& where, int extended_code, int system_errno,
                           const std::string& message, int busy_timeout_ms) {
  const int code = extended_code & 0xff;
  const std::string name = sqlite3_errstr(extended_code);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    return fmt::format(
        "run database {} is locked by another process or connection: waited {:g} s for it "
        "(SQLITE_BUSY: {})",
        where, busy_timeout_ms / 1000.0, message);
  const bool no_room = system_errno == ENOSPC || system_errno == EDQUOT || system_errno == EFBIG;
  if (code == SQLITE_FULL || (code == SQLITE_IOERR && no_room))
    return fmt::format(
        "run database {} cannot grow: the disk is full or a file size limit was reached ({}; "
        "SQLite: {})",
        where, system_errno != 0 ? std::strerror(system_errno) : name, message);
  // A write past a file size limit (EFBIG) comes back as a plain write error, its errno not
  // always kept: said as what it most often is.
  if (extended_code == SQLITE_IOERR_WRITE)
    return fmt::format(
        "run database {} cannot be written: the disk is full, a file size limit was reached or "
        "the disk failed (SQLite: {})",
        where, message);
  if (code == SQLITE_CORRUPT)
    return fmt::format("run database {} is corrupt (SQLITE_CORRUPT: {})", where, message);
  if (code == SQLITE_NOTADB)
    return fmt::format(
        "run database {} is corrupt or not a Regime run database: not SQLite (SQLITE_NOTADB: {})",
        where, message);
  return fmt::format("run database {}: {}", where, message);
}

namespace {

ErrorKind failure_kind(int extended_code) {
  const int code = extended_code & 0xff;
  return code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? ErrorKind::Parse : ErrorKind::Io;
}

// A folder or a device where the file should be: said as such, before SQLite's "unable to open".
void check_is_file_or_missing(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  throw Error(ErrorKind::Io,
              "run database " + path.string() +
                  (S_ISDIR(st.st_mode) ? " is a folder, not a file" : " is not a regular file"));
}

class SqliteConnection : public Connection {
 public:
  explicit SqliteConnection(const std::filesystem::path& path)
      : path_(path), busy_timeout_ms_(sqlite_busy_timeout_ms()) {
    // The folder is made as an output file's is; where it cannot be, the checks below say why.
    if (path.has_parent_path()) try {
        create_output_dirs(path.parent_path());
      } catch (const Error&) {
      }
    check_is_file_or_missing(path);
    // Reached component by component, never through another user's link, and not a link itself
    // (SQLITE_OPEN_NOFOLLOW says so to SQLite too, should one appear after the check).
    check_output_file(path);
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                        nullptr) != SQLITE_OK) {
      std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error(ErrorKind::Io, "cannot open run database " + path.string() + ": " + msg);
    }
    sqlite3_busy_timeout(db_, busy_timeout_ms_);  // another regime may be writing its run
    try {
      schema_version();  // the first read: says what the file is (locked, corrupt, not SQLite)
      use_wal();
    } catch (const Error&) {
      sqlite3_close(db_);
      throw;
    }
  }
  ~SqliteConnection() override { sqlite3_close(db_); }

  const Dialect& dialect() const override { return kSqlite; }

  std::vector<Row> query(const std::string& sql, const Params& params) override {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) fail();
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(st, sqlite3_finalize);
    for (size_t i = 0; i < params.size(); ++i) bind(st, static_cast<int>(i + 1), params[i]);
    std::vector<Row> rows;
    for (;;) {
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) break;
      if (rc == SQLITE_CONSTRAINT && sqlite3_extended_errcode(db_) == SQLITE_CONSTRAINT_UNIQUE)
        throw Duplicate("run database " + path_.string() + ": " + sqlite3_errmsg(db_));
      if (rc != SQLITE_ROW) fail();
      Row row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) row.push_back(column(st, c));
      rows.push_back(std::move(row));
    }
    return rows;
  }
  int64_t changes() override { return sqlite3_changes(db_); }
  int64_t last_insert_id() override { return sqlite3_last_insert_rowid(db_); }

  bool has_column(const std::string& table, const std::string& column) override {
    for (const Row& r : query("PRAGMA table_info(" + table + ")", {}))
      if (as_text(r.at(1)) == column) return true;
    return false;
  }
  int schema_version() override {
    auto rows = query("PRAGMA user_version", {});
    return rows.empty() ? 0 : static_cast<int>(as_int(rows[0].at(0)));
  }
  void set_schema_version(int version) override {
    query("PRAGMA user_version = " + std::to_string(version), {});
  }
  // IMMEDIATE takes the write lock at once: of two processes opening an old file together, the
  // second waits, then finds it upgraded (the version is read again inside the transaction).
  void begin_migration() override { query("BEGIN IMMEDIATE", {}); }
  void end_migration(bool ok) override {
    if (ok) {
      query("COMMIT", {});
    } else {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }

 private:
  [[noreturn]] void fail() {
    const int code = sqlite3_extended_errcode(db_);
    throw Error(failure_kind(code), sqlite_failure(path_.string(), code, sqlite3_system_errno(db_),
                                                   sqlite3_errmsg(db_), busy_timeout_ms_));
  }
  static void bind(sqlite3_stmt* st, int i, const Value& v) {
    if (const auto* s = std::get_if<std::string>(&v)) {
      sqlite3_bind_text(st, i, s->c_str(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
    } else if (const auto* n = std::get_if<int64_t>(&v)) {
      sqlite3_bind_int64(st, i, *n);
    } else if (const auto* d = std::get_if<double>(&v)) {
      sqlite3_bind_double(st, i, *d);
    } else {
      sqlite3_bind_null(st, i);
    }
  }
  static Value column(sqlite3_stmt* st, int c) {
    switch (sqlite3_column_type(st, c)) {
      case SQLITE_NULL:
        return {};
      case SQLITE_INTEGER:
        return static_cast<int64_t>(sqlite3_column_int64(st, c));
      case SQLITE_FLOAT:
        return sqlite3_column_double(st, c);
      default: {
        const unsigned char* t = sqlite3_column_text(st, c);
        return std::string(t != nullptr ? reinterpret_cast<const char*>(t) : "",
                           static_cast<size_t>(sqlite3_column_bytes(st, c)));
      }
    }
  }

  // Switching a rollback-journal file to WAL takes the exclusive lock. While another process
  // opens the same old file (and holds a lock this one could deadlock with), SQLite answers BUSY
  // at once instead of calling the busy handler, so the switch is tried again here, up to the
  // same timeout. A file system without shared memory (some network mounts) keeps the rollback
  // journal, which is still safe with the busy timeout, only slower under contention.
  void use_wal() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
    for (int attempt = 0;; ++attempt) {
      char* err = nullptr;
      const int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL;", nullptr, nullptr, &err);
      std::string msg = err != nullptr ? err : "";
      sqlite3_free(err);
      if (rc == SQLITE_OK) return;
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
        throw Error(failure_kind(rc),
                    sqlite_failure(path_.string(), rc, sqlite3_system_errno(db_),
                                   msg.empty() ? sqlite3_errmsg(db_) : msg, busy_timeout_ms_));
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 1 + attempt)));
    }
  }

  std::filesystem::path path_;
  int busy_timeout_ms_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Connection> open_sqlite(const std::filesystem::path& path) {
  return std::make_unique<SqliteConnection>(path);
}

}  // namespace regime::sql
