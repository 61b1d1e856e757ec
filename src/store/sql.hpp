#pragma once
// The run store's backends behind one small interface: SQLite (a file, the embedded default) and
// MariaDB (a server every node of a cluster shares). Statements are written once, with `?` for
// parameters and {tokens} for what the two dialects spell differently (apply_dialect); values
// travel as the four SQL kinds both have.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"

namespace regime::sql {

using Value = std::variant<std::monostate, int64_t, double, std::string>;  // monostate: NULL
using Row = std::vector<Value>;
using Params = std::vector<Value>;

std::string as_text(const Value& v);  // NULL: ""
double as_real(const Value& v);       // NULL: 0; text that is not a number: Error Parse
int64_t as_int(const Value& v);       // NULL: 0; not a whole number in range: Error Parse
inline bool is_null(const Value& v) { return std::holds_alternative<std::monostate>(v); }

// What the backends spell differently. Tokens in statements: {id} an auto-assigned 64-bit primary
// key, {text} unbounded text, {key} text that is part of a key or an index, {int} a 64-bit
// integer, {real} a double, {add_column} ALTER TABLE's add (idempotent where the backend allows),
// {answer_key} the answer cache's key (the whole prompt: SQLite only; MariaDB cannot key on
// unbounded text and replaces by delete and insert instead).
struct Dialect {
  const char* name;
  const char* id;
  const char* text;
  const char* key;
  const char* integer;
  const char* real;
  const char* add_column;
  const char* answer_key;
  const char* sweep_ref;  // {sweep_ref}: sweep_id's reference, which SQLite never enforces;
                          // MariaDB would, and a decision may name a sweep of another store
};
extern const Dialect kSqlite;
extern const Dialect kMariaDb;

// `sql` with every {token} replaced by the dialect's spelling. Error Internal on an unknown token.
std::string apply_dialect(std::string_view sql, const Dialect& d);

// A write that would repeat a unique key (a row sent again): the row is there already.
class Duplicate : public Error {
 public:
  explicit Duplicate(const std::string& message) : Error(ErrorKind::Io, message) {}
};

// The server cannot be reached or stopped answering within its timeouts (not an SQL error):
// the store queues writes and answers reads from its cache.
class Unreachable : public Error {
 public:
  explicit Unreachable(const std::string& message) : Error(ErrorKind::Io, message) {}
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual const Dialect& dialect() const = 0;
  // Runs one statement with its parameters; the rows it returns (none for a write).
  virtual std::vector<Row> query(const std::string& sql, const Params& params = {}) = 0;
  // The rows the last write changed, and the id the last insert assigned.
  virtual int64_t changes() = 0;
  virtual int64_t last_insert_id() = 0;
  virtual bool has_column(const std::string& table, const std::string& column) = 0;
  // The schema version the database says it has (0: none yet) and setting it; begin/end_migration
  // keep two processes from migrating at once (the second then finds the schema current).
  virtual int schema_version() = 0;
  virtual void set_schema_version(int version) = 0;
  virtual void begin_migration() = 0;
  virtual void end_migration(bool ok) = 0;
};

}  // namespace regime::sql
