#include "store/db_uri.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "common/error.hpp"
#include "common/files.hpp"

namespace regime {

namespace {

constexpr std::string_view kScheme = "mariadb://";

// `db` with any password between "USER:" and "@" hidden, and the value of every query parameter
// but credentials= (a path, which the message may name) too, so that the message can go to a log:
// ?password=SECRET is a mistake, and its value a secret all the same.
std::string redacted(const std::string& db) {
  std::string out = db;
  std::string query;
  if (const size_t q = out.find('?'); q != std::string::npos) {
    std::istringstream params(out.substr(q + 1));
    for (std::string kv; std::getline(params, kv, '&');) {
      const size_t eq = kv.find('=');
      const bool shown = eq == std::string::npos || kv.substr(0, eq) == "credentials";
      query += (query.empty() ? "?" : "&") + (shown ? kv : kv.substr(0, eq) + "=***");
    }
    out.resize(q);
  }
  const size_t start = out.find("://");
  const size_t at = out.find('@', start == std::string::npos ? 0 : start);
  const size_t colon = out.find(':', start == std::string::npos ? 0 : start + 3);
  if (start != std::string::npos && at != std::string::npos && colon < at)
    out = out.substr(0, colon + 1) + "***" + out.substr(at);
  return out + query;
}

[[noreturn]] void bad(const std::string& db, const std::string& why) {
  throw Error(ErrorKind::InvalidArgument,
              "--db " + redacted(db) + ": " + why +
                  " (expected mariadb://USER@HOST[:PORT]/DATABASE[?credentials=FILE])");
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

}  // namespace

std::string DbUri::display() const {
  return std::string(kScheme) + user + "@" + host + ":" + std::to_string(port) + "/" + database;
}

std::optional<DbUri> parse_db_uri(const std::string& db) {
  if (db.rfind(kScheme, 0) != 0) {
    const size_t scheme_end = db.find("://");
    if (scheme_end != std::string::npos && db.find('/') > scheme_end)
      bad(db, "unknown scheme " + db.substr(0, scheme_end) + " (a server store is mariadb://)");
    return std::nullopt;
  }
  DbUri u;
  std::string rest = db.substr(kScheme.size());
  std::string query;
  if (const size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.resize(q);
  }
  const size_t at = rest.find('@');
  if (at == std::string::npos || at == 0) bad(db, "no user");
  u.user = rest.substr(0, at);
  if (u.user.find(':') != std::string::npos)
    bad(db,
        "a password does not belong in the URI (command lines and logs show it); put it in "
        "the credentials file");
  rest = rest.substr(at + 1);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash + 1 == rest.size()) bad(db, "no database name");
  u.database = rest.substr(slash + 1);
  if (u.database.find_first_of("/`'\" ") != std::string::npos) bad(db, "odd database name");
  std::string hostport = rest.substr(0, slash);
  if (const size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    const std::string port = hostport.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos)
      bad(db, "port " + port + " is not a number");
    u.port = std::stoi(port);
    if (u.port < 1 || u.port > 65535) bad(db, "port " + port + " is out of range");
    hostport.resize(colon);
  }
  if (hostport.empty()) bad(db, "no host");
  u.host = hostport;
  std::istringstream params(query);
  for (std::string kv; std::getline(params, kv, '&');) {
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (key != "credentials") bad(db, "unknown parameter " + key + " (known: credentials)");
    if (value.empty() || value[0] != '/') bad(db, "credentials= needs an absolute path");
    u.credentials = value;
    u.credentials_named = true;
  }
  return u;
}

std::string read_db_password(const DbUri& uri) {
  const std::string name = uri.credentials.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT && !uri.credentials_named) return "";
    throw Error(ErrorKind::Io, "cannot open the database credentials file " + name);
  }
  struct stat st {};
  const int rc = ::fstat(fd, &st);
  ::close(fd);
  if (rc != 0 || !S_ISREG(st.st_mode))
    throw Error(ErrorKind::Io, "the database credentials file " + name + " is not a regular file");
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if ((st.st_mode & 077) != 0)
    throw Error(ErrorKind::NoPermission, "the database credentials file " + name + " has mode " +
                                             mode + ": others may read it; chmod 600 " + name);
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    throw Error(ErrorKind::NoPermission, "the database credentials file " + name +
                                             " belongs to uid " + std::to_string(st.st_uid) +
                                             ", neither root nor this user");
  std::istringstream in(read_regular_file(uri.credentials, 64 * 1024));
  std::string password;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';' || line[0] == '[') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || trim(line.substr(0, eq)) != "password") continue;
    password = trim(line.substr(eq + 1));
    if (password.size() >= 2 && (password.front() == '"' || password.front() == '\'') &&
        password.back() == password.front())
      password = password.substr(1, password.size() - 2);
  }
  return password;
}

}  // namespace regime
