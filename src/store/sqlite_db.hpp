#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "store/sql.hpp"

namespace regime::sql {

inline constexpr int kSqliteBusyTimeout_ms = 30000;

// How long a writer waits for another's lock: $REGIME_DB_BUSY_TIMEOUT_S (seconds, 0.001 to 3600;
// Error InvalidArgument otherwise), else kSqliteBusyTimeout_ms.
int sqlite_busy_timeout_ms();

// Opens or creates the SQLite file (and its directory) in WAL mode, a writer waiting up to
// sqlite_busy_timeout_ms() for another's transaction. Error Io when it cannot (a folder or a
// device at the path, a lock held past the wait, a full disk), Parse when the file is corrupt or
// not SQLite; every statement after fails the same way, each message naming which.
std::unique_ptr<Connection> open_sqlite(const std::filesystem::path& path);

// Pure: what a failed SQLite call says, from its extended result code, the errno of the last
// system call it made and its message: "... is locked by another process or connection: waited
// 30 s for it (SQLITE_BUSY ...)", "... cannot grow: the disk is full ...", "... is corrupt ...".
std::string sqlite_failure(const std::string& where, int extended_code, int system_errno,
                           const std::string& message, int busy_timeout_ms);

}  // namespace regime::sql
