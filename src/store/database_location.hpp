#pragma once
// Where the run database is, typed once where the command line is read (--db, a config file's
// `db`, or neither): the default store in the state folder (the system's as root, the user's
// otherwise: common/paths.hpp's state_dir()), a SQLite file named by its path, or a server named
// by its URI (store/db_uri.hpp). The sessions open the store from it and never read the text
// again.
#include <filesystem>
#include <optional>
#include <string>

#include "store/db_uri.hpp"

namespace regime {

class DatabaseLocation {
 public:
  // The default store. Its file is found (state_dir()) only when asked for, so that a command that
  // keeps nothing, or only asks for --help, never creates the state folder.
  DatabaseLocation() = default;
  // --db's text: empty is the default, a server URI (mariadb://...) is a server, anything else a
  // SQLite file's path. Error InvalidArgument, worded as parse_db_uri, for a malformed URI.
  static DatabaseLocation from_text(const std::string& text);
  // A file already known to be a SQLite database (its first bytes say so): never a server.
  static DatabaseLocation file(std::filesystem::path path);

  bool is_default() const { return !named_; }
  bool is_server() const { return server_.has_value(); }
  // The server's URI, parsed; nullopt for a file.
  const std::optional<DbUri>& server() const { return server_; }
  // The file as named (a relative path stays relative) or the default's, the server's URI as
  // written. Error as state_dir() for the default when its folder is refused.
  std::filesystem::path path() const;
  // This location with the default's file found now: a command that must fail on a refused
  // state folder before it does anything else (a job's prolog) asks for it first.
  DatabaseLocation resolved() const;

 private:
  bool named_ = false;
  std::filesystem::path text_;  // as named; for the default once resolved, its file
  std::optional<DbUri> server_;
};

}  // namespace regime
