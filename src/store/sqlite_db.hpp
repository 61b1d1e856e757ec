#pragma once
#include <filesystem>
#include <memory>

#include "store/sql.hpp"

namespace regime::sql {

inline constexpr int kSqliteBusyTimeout_ms = 30000;

// Opens or creates the SQLite file (and its directory) in WAL mode, a writer waiting up to
// kSqliteBusyTimeout_ms for another's transaction. Error Io when it cannot, Parse when the file is
// not SQLite.
std::unique_ptr<Connection> open_sqlite(const std::filesystem::path& path);

}  // namespace regime::sql
