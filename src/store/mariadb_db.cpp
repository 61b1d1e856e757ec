#include "store/mariadb_db.hpp"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include <cmath>
#include <cstdio>

namespace regime::sql {

namespace {

// Client errors that mean the server is not there or stopped answering, not that it refused.
bool is_unreachable(unsigned err) {
  return err == CR_CONNECTION_ERROR || err == CR_CONN_HOST_ERROR || err == CR_SERVER_GONE_ERROR ||
         err == CR_SERVER_LOST || err == CR_UNKNOWN_HOST || err == CR_SERVER_LOST_EXTENDED ||
         err == ER_CONNECTION_KILLED || err == 1053 /* ER_SERVER_SHUTDOWN */;
}

class MariaDbConnection : public Connection {
 public:
  explicit MariaDbConnection(const DbUri& uri) : uri_(uri) {
    const std::string password = read_db_password(uri);
    db_ = mysql_init(nullptr);
    if (db_ == nullptr) throw Error(ErrorKind::Internal, "mysql_init: out of memory");
    unsigned connect = kMariaDbConnectTimeout_s, read = kMariaDbReadTimeout_s,
             write = kMariaDbWriteTimeout_s;
    mysql_options(db_, MYSQL_OPT_CONNECT_TIMEOUT, &connect);
    mysql_options(db_, MYSQL_OPT_READ_TIMEOUT, &read);
    mysql_options(db_, MYSQL_OPT_WRITE_TIMEOUT, &write);
    mysql_options(db_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    // No option files: what the URI and the credentials file say is all there is.
    const unsigned protocol = MYSQL_PROTOCOL_TCP;
    mysql_options(db_, MYSQL_OPT_PROTOCOL, &protocol);
    if (mysql_real_connect(db_, uri.host.c_str(), uri.user.c_str(),
                           password.empty() ? nullptr : password.c_str(), uri.database.c_str(),
                           static_cast<unsigned>(uri.port), nullptr, 0) == nullptr) {
      const unsigned err = mysql_errno(db_);
      const std::string msg = mysql_error(db_);
      mysql_close(db_);
      db_ = nullptr;
      if (is_unreachable(err)) throw Unreachable("run store " + uri.display() + ": " + msg);
      throw Error(ErrorKind::Io, "run store " + uri.display() + ": " + msg);
    }
  }
  ~MariaDbConnection() override {
    if (db_ != nullptr) mysql_close(db_);
  }

  const Dialect& dialect() const override { return kMariaDb; }

  std::vector<Row> query(const std::string& sql, const Params& params) override {
    const std::string text = inline_params(sql, params);
    if (mysql_real_query(db_, text.data(), text.size()) != 0) fail();
    MYSQL_RES* res = mysql_store_result(db_);
    if (res == nullptr) {
      if (mysql_field_count(db_) != 0) fail();  // a result was due but did not come
      changes_ = static_cast<int64_t>(mysql_affected_rows(db_));
      last_id_ = static_cast<int64_t>(mysql_insert_id(db_));
      return {};
    }
    std::unique_ptr<MYSQL_RES, void (*)(MYSQL_RES*)> guard(res, mysql_free_result);
    const unsigned n = mysql_num_fields(res);
    MYSQL_FIELD* fields = mysql_fetch_fields(res);
    std::vector<Row> rows;
    while (MYSQL_ROW r = mysql_fetch_row(res)) {
      const unsigned long* lengths = mysql_fetch_lengths(res);
      Row row;
      for (unsigned c = 0; c < n; ++c) row.push_back(value(fields[c], r[c], lengths[c]));
      rows.push_back(std::move(row));
    }
    return rows;
  }
  int64_t changes() override { return changes_; }
  int64_t last_insert_id() override { return last_id_; }

  bool has_column(const std::string& table, const std::string& column) override {
    return !query(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = DATABASE() AND "
                "table_name = ? AND column_name = ?",
                {table, column})
                .empty();
  }
  int schema_version() override {
    query("CREATE TABLE IF NOT EXISTS regime_schema (version INT NOT NULL)", {});
    auto rows = query("SELECT MAX(version) FROM regime_schema", {});
    return rows.empty() ? 0 : static_cast<int>(as_int(rows[0].at(0)));
  }
  void set_schema_version(int version) override {
    query("DELETE FROM regime_schema", {});
    query("INSERT INTO regime_schema (version) VALUES (?)", {int64_t{version}});
  }
  // DDL commits on its own in MariaDB, so a migration is one process's at a time by a named lock
  // rather than a transaction; every step is idempotent, so one cut short is finished by the next.
  void begin_migration() override {
    auto rows = query("SELECT GET_LOCK('regime_schema', 30)", {});
    if (rows.empty() || as_int(rows[0].at(0)) != 1)
      throw Error(ErrorKind::Io, "run store " + uri_.display() +
                                     ": another process held the schema lock for 30 s");
  }
  void end_migration(bool) override { query("SELECT RELEASE_LOCK('regime_schema')", {}); }

 private:
  [[noreturn]] void fail() {
    const unsigned err = mysql_errno(db_);
    const std::string msg = "run store " + uri_.display() + ": " + mysql_error(db_);
    if (is_unreachable(err)) throw Unreachable(msg);
    if (err == ER_DUP_ENTRY) throw Duplicate(msg);
    throw Error(ErrorKind::Io, msg);
  }

  // `?` replaced by each parameter as a literal, strings escaped by the client library for the
  // connection's character set (the statements hold no `?` of their own).
  std::string inline_params(const std::string& sql, const Params& params) {
    std::string out;
    size_t next = 0;
    for (char ch : sql) {
      if (ch != '?') {
        out += ch;
        continue;
      }
      if (next >= params.size())
        throw Error(ErrorKind::Internal, "SQL has more parameters than values: " + sql);
      const Value& v = params[next++];
      if (const auto* s = std::get_if<std::string>(&v)) {
        std::string escaped(s->size() * 2 + 1, '\0');
        const unsigned long n = mysql_real_escape_string(db_, escaped.data(), s->data(), s->size());
        out += '\'';
        out.append(escaped.data(), n);
        out += '\'';
      } else if (const auto* i = std::get_if<int64_t>(&v)) {
        out += std::to_string(*i);
      } else if (const auto* d = std::get_if<double>(&v); d != nullptr && std::isfinite(*d)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        out += buf;
      } else {
        out += "NULL";
      }
    }
    if (next != params.size())
      throw Error(ErrorKind::Internal, "SQL has fewer parameters than values: " + sql);
    return out;
  }

  static Value value(const MYSQL_FIELD& f, const char* data, unsigned long length) {
    if (data == nullptr) return {};
    const std::string s(data, length);
    switch (f.type) {
      case MYSQL_TYPE_TINY:
      case MYSQL_TYPE_SHORT:
      case MYSQL_TYPE_LONG:
      case MYSQL_TYPE_INT24:
      case MYSQL_TYPE_LONGLONG:
        return static_cast<int64_t>(std::stoll(s));
      case MYSQL_TYPE_FLOAT:
      case MYSQL_TYPE_DOUBLE:
      case MYSQL_TYPE_DECIMAL:
      case MYSQL_TYPE_NEWDECIMAL:
        return std::stod(s);
      default:
        return s;
    }
  }

  DbUri uri_;
  MYSQL* db_ = nullptr;
  int64_t changes_ = 0;
  int64_t last_id_ = 0;
};

}  // namespace

std::unique_ptr<Connection> open_mariadb(const DbUri& uri) {
  return std::make_unique<MariaDbConnection>(uri);
}

}  // namespace regime::sql
