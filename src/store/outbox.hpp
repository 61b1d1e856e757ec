#pragma once
// What a node keeps on disk for a server store it cannot reach: the writes it could not send (one
// file each, sent in order when the server is back) and the last rows it read of the tables that
// decide caps (sweeps, decisions) and of its own jobs, which it answers from while the server is
// down.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/sql.hpp"

namespace regime {

nlohmann::json to_json(const sql::Params& values);
sql::Params params_from_json(const nlohmann::json& values);

// A unique id made here: the host, the time in microseconds and 64 random bits.
std::string new_row_uid();

class Outbox {
 public:
  explicit Outbox(std::filesystem::path dir);  // created (0700) on first write
  const std::filesystem::path& dir() const { return dir_; }

  // A write for later: the statement (dialect applied), its values, and `refs`: parameter index ->
  // {"table", "uid"} of a row queued before it whose id the server assigns.
  void push(const std::string& statement, const sql::Params& values,
            const nlohmann::json& refs = nlohmann::json::object());
  size_t size() const;
  // Sends every queued write in order through `db`, removing each once sent. Stops at the first
  // Unreachable (what is left stays queued); a write the server refuses for another reason is
  // moved to failed/ so it cannot block the rest. Another process of the node sending the same
  // queue at the moment makes this one return 0. Returns how many were sent.
  size_t send(sql::Connection& db);

  // The cached rows of `name` (empty when never written) and their replacement.
  std::optional<std::vector<sql::Row>> cached(const std::string& name) const;
  void cache(const std::string& name, const std::vector<sql::Row>& rows);

 private:
  std::filesystem::path dir_;
};

}  // namespace regime
