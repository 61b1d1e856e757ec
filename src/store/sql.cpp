#include "store/sql.hpp"

#include <charconv>
#include <string>

namespace regime::sql {

std::string as_text(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  return "";
}

namespace {

// A stored value is input: text that is not wholly a number is an error naming it, never a
// std::invalid_argument from deep inside a read.
Error not_a_number(const std::string& s, const char* what) {
  const std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
  return Error(ErrorKind::Parse, "'" + shown + "' is not " + what);
}

}  // namespace

double as_real(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* s = std::get_if<std::string>(&v)) {
    if (s->empty()) return 0.0;
    double out = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), out);
    if (ec != std::errc() || end != s->data() + s->size()) throw not_a_number(*s, "a number");
    return out;
  }
  return 0;
}

int64_t as_int(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) {
    // Outside this range the conversion is undefined: the value is refused instead.
    if (!(*d >= -9.2e18 && *d <= 9.2e18)) throw not_a_number(std::to_string(*d), "a whole number");
    return static_cast<int64_t>(*d);
  }
  if (const auto* s = std::get_if<std::string>(&v)) {
    if (s->empty()) return 0;
    int64_t out = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), out);
    if (ec != std::errc() || end != s->data() + s->size()) throw not_a_number(*s, "a whole number");
    return out;
  }
  return 0;
}

const Dialect kSqlite{"sqlite",
                      "INTEGER PRIMARY KEY AUTOINCREMENT",
                      "TEXT",
                      "TEXT",
                      "INTEGER",
                      "REAL",
                      "ADD COLUMN",
                      ", PRIMARY KEY (model, prompt)",
                      " REFERENCES sweeps(id)"};
// LONGTEXT: a report or a sweep table can pass TEXT's 64 KiB. VARCHAR(255) in utf8mb4 keeps a
// two-column key under InnoDB's 3072-byte limit. The binary no-pad collation compares text as
// SQLite does: by its bytes, case and trailing spaces included.
const Dialect kMariaDb{"mariadb",
                       "BIGINT PRIMARY KEY AUTO_INCREMENT",
                       "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin",
                       "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin",
                       "BIGINT",
                       "DOUBLE",
                       "ADD COLUMN IF NOT EXISTS",
                       "",
                       ""};

std::string apply_dialect(std::string_view sql, const Dialect& d) {
  std::string out;
  out.reserve(sql.size() + 64);
  size_t i = 0;
  while (i < sql.size()) {
    if (sql[i] != '{') {
      out += sql[i++];
      continue;
    }
    const size_t end = sql.find('}', i);
    if (end == std::string_view::npos)
      throw Error(ErrorKind::Internal, "unclosed token in SQL: " + std::string(sql));
    const std::string_view token = sql.substr(i + 1, end - i - 1);
    const char* spelled = token == "id"           ? d.id
                          : token == "text"       ? d.text
                          : token == "key"        ? d.key
                          : token == "int"        ? d.integer
                          : token == "real"       ? d.real
                          : token == "add_column" ? d.add_column
                          : token == "answer_key" ? d.answer_key
                          : token == "sweep_ref"  ? d.sweep_ref
                                                  : nullptr;
    if (spelled == nullptr)
      throw Error(ErrorKind::Internal, "unknown token {" + std::string(token) + "} in SQL");
    out += spelled;
    i = end + 1;
  }
  return out;
}

}  // namespace regime::sql
