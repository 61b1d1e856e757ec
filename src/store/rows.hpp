#pragma once
// Typed row binding shared by both backends: a table is its name and a list of columns, each a
// name with a way to read the column from a record and to write it back. Inserts, updates and
// selects are made from the list, so a column is named once.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/json_text.hpp"
#include "store/sql.hpp"

namespace regime::rows {

inline sql::Value to_value(const std::string& v) { return v; }
inline sql::Value to_value(double v) { return v; }
inline sql::Value to_value(int64_t v) { return v; }
inline sql::Value to_value(int v) { return int64_t{v}; }
inline sql::Value to_value(const nlohmann::json& v) {
  return v.is_null() ? sql::Value{} : sql::Value{v.dump()};
}
template <class T>
sql::Value to_value(const std::optional<T>& v) {
  return v ? to_value(*v) : sql::Value{};
}

inline void from_value(const sql::Value& v, std::string& out) { out = sql::as_text(v); }
inline void from_value(const sql::Value& v, double& out) { out = sql::as_real(v); }
inline void from_value(const sql::Value& v, int64_t& out) { out = sql::as_int(v); }
inline void from_value(const sql::Value& v, int& out) { out = static_cast<int>(sql::as_int(v)); }
// Malformed JSON reads as null rather than failing the whole list.
inline void from_value(const sql::Value& v, nlohmann::json& out) {
  out = sql::is_null(v) ? nlohmann::json() : parse_json_or_discarded(sql::as_text(v));
  if (out.is_discarded()) out = nullptr;
}
template <class T>
void from_value(const sql::Value& v, std::optional<T>& out) {
  if (sql::is_null(v)) {
    out.reset();
  } else {
    T t{};
    from_value(v, t);
    out = t;
  }
}

template <class R>
struct Column {
  const char* name;
  std::function<sql::Value(const R&)> get;
  std::function<void(R&, const sql::Value&)> set;
};

// A column bound to a member, or to a member of a member (a record's provenance).
template <class R, class T>
Column<R> field(const char* name, T R::*m) {
  return {name, [m](const R& r) { return to_value(r.*m); },
          [m](R& r, const sql::Value& v) { from_value(v, r.*m); }};
}
template <class R, class S, class T>
Column<R> field(const char* name, S R::*outer, T S::*inner) {
  return {name, [outer, inner](const R& r) { return to_value(r.*outer.*inner); },
          [outer, inner](R& r, const sql::Value& v) { from_value(v, r.*outer.*inner); }};
}

// A table with an `id` primary key (R::id) and a client-made unique id `uid` per row, so a write
// sent again (from the queue, after a lost answer) is refused as a Duplicate instead of adding a
// second row.
template <class R>
struct Table {
  const char* name;
  std::vector<Column<R>> columns;

  std::string column_list() const {
    std::string s;
    for (const auto& c : columns) s += std::string(s.empty() ? "" : ", ") + c.name;
    return s;
  }
  std::string insert_sql() const {
    std::string marks;
    for (size_t i = 0; i < columns.size(); ++i) marks += ", ?";
    return std::string("INSERT INTO ") + name + " (uid, " + column_list() + ") VALUES (?" + marks +
           ")";
  }
  sql::Params insert_params(const R& r, const std::string& uid) const {
    sql::Params p{uid};
    for (const auto& c : columns) p.push_back(c.get(r));
    return p;
  }
  // UPDATE ... WHERE `key` = ?: the values, then the key's.
  std::string update_sql(const char* key) const {
    std::string set;
    for (const auto& c : columns) set += std::string(set.empty() ? "" : ", ") + c.name + " = ?";
    return std::string("UPDATE ") + name + " SET " + set + " WHERE " + key + " = ?";
  }
  sql::Params update_params(const R& r, sql::Value key) const {
    sql::Params p;
    for (const auto& c : columns) p.push_back(c.get(r));
    p.push_back(std::move(key));
    return p;
  }
  std::string select_sql() const {
    return std::string("SELECT id, ") + column_list() + " FROM " + name;
  }
  // A row as stored is input (another process, another node or a hand may have written it):
  // a value of the wrong kind, or a row of the wrong width, is Error Parse naming the table, the
  // row and the column.
  R read(const sql::Row& row) const {
    if (row.size() != columns.size() + 1)
      throw Error(ErrorKind::Parse, std::string("a row of ") + name + " has " +
                                        std::to_string(row.size()) + " values, not " +
                                        std::to_string(columns.size() + 1));
    R r;
    r.id = read_id(row.at(0));
    for (size_t i = 0; i < columns.size(); ++i) {
      try {
        columns[i].set(r, row[i + 1]);
      } catch (const Error& e) {
        throw Error(ErrorKind::Parse, std::string(name) + " row " + std::to_string(r.id) +
                                          ": column " + columns[i].name + ": " + e.what());
      }
    }
    return r;
  }

 private:
  int64_t read_id(const sql::Value& v) const {
    try {
      return sql::as_int(v);
    } catch (const Error& e) {
      throw Error(ErrorKind::Parse, std::string("a row of ") + name + ": its id: " + e.what());
    }
  }
};

}  // namespace regime::rows
