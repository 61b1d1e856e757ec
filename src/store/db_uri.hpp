#pragma once
// Where a run store lives: a SQLite file (any --db that is not a URI), or a MariaDB server named
// by `mariadb://USER@HOST[:PORT]/DATABASE[?credentials=FILE]`. The password is never part of the
// URI (command lines and logs show it): it comes from a credentials file only root or the caller
// can read, /etc/regime/db.cnf unless the URI names another.
#include <filesystem>
#include <optional>
#include <string>

namespace regime {

inline constexpr const char* kDefaultDbCredentials = "/etc/regime/db.cnf";
inline constexpr int kMariaDbDefaultPort = 3306;

struct DbUri {
  std::string user;
  std::string host;
  int port = kMariaDbDefaultPort;
  std::string database;
  std::filesystem::path credentials = kDefaultDbCredentials;
  bool credentials_named = false;  // the URI named the file: it must exist
  // The URI as shown in messages and records: no password, which it never holds anyway.
  std::string display() const;
};

// Pure. Empty for a --db that is not a server URI (a SQLite path); Error InvalidArgument naming
// what is wrong for a malformed one, or one that carries a password.
std::optional<DbUri> parse_db_uri(const std::string& db);

// The `password` of a credentials file in the MariaDB option-file form (`[client]` then
// `password=...`; `#` and `;` start comments); empty when the file has none. Error NoPermission
// naming the file and its mode when group or others may read or write it, or it belongs to
// someone other than the caller or root; Io when a file the URI named cannot be read. A default
// file that does not exist means no password.
std::string read_db_password(const DbUri& uri);

}  // namespace regime
