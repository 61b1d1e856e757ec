#include "store/outbox.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "common/files.hpp"
#include "common/json_text.hpp"

namespace regime {

namespace fs = std::filesystem;

nlohmann::json to_json(const sql::Params& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : values) {
    if (const auto* s = std::get_if<std::string>(&v)) {
      out.push_back(*s);
    } else if (const auto* i = std::get_if<int64_t>(&v)) {
      out.push_back(*i);
    } else if (const auto* d = std::get_if<double>(&v)) {
      out.push_back(*d);
    } else {
      out.push_back(nullptr);
    }
  }
  return out;
}

sql::Params params_from_json(const nlohmann::json& values) {
  sql::Params out;
  for (const auto& v : values) {
    if (v.is_string()) {
      out.emplace_back(v.get<std::string>());
    } else if (v.is_number_integer()) {
      out.emplace_back(v.get<int64_t>());
    } else if (v.is_number()) {
      out.emplace_back(v.get<double>());
    } else {
      out.emplace_back();
    }
  }
  return out;
}

std::string new_row_uid() {
  // Seeded once per process: a child forked after its parent made a uid must not repeat the
  // parent's sequence (two such children made the same uid in the same microsecond).
  static std::mt19937_64 rng;
  static pid_t seeded_for = 0;
  if (seeded_for != ::getpid()) {
    rng.seed(std::random_device{}());
    seeded_for = ::getpid();
  }
  char host[64] = {};
  ::gethostname(host, sizeof host - 1);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.60s-%lld-%016llx", host, static_cast<long long>(us),
                static_cast<unsigned long long>(rng()));
  return buf;
}

Outbox::Outbox(fs::path dir) : dir_(std::move(dir)) {}

namespace {

std::vector<fs::path> queued_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "queue", ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());  // named by the time they were queued
  return files;
}

void make_private_dir(const fs::path& dir) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
}

}  // namespace

void Outbox::push(const std::string& statement, const sql::Params& values,
                  const nlohmann::json& refs) {
  make_private_dir(dir_ / "queue");
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  char name[64];
  std::snprintf(name, sizeof name, "%020lld-%d.json", static_cast<long long>(ns),
                static_cast<int>(::getpid()));
  nlohmann::json entry{{"sql", statement}, {"params", to_json(values)}, {"refs", refs}};
  write_file_atomic(dir_ / "queue" / name, entry.dump());
}

size_t Outbox::size() const { return queued_files(dir_).size(); }

size_t Outbox::send(sql::Connection& db) {
  if (!fs::exists(dir_ / "queue")) return 0;
  const int lock = ::open((dir_ / "queue" / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return 0;
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock);
    return 0;
  }
  size_t sent = 0;
  try {
    for (const fs::path& file : queued_files(dir_)) {
      nlohmann::json entry = parse_json_or_discarded(read_regular_file(file));
      try {
        if (entry.is_discarded()) throw Error(ErrorKind::Parse, "unreadable queue entry");
        sql::Params params = params_from_json(entry["params"]);
        for (const auto& [index, ref] : entry["refs"].items()) {
          const std::string table = ref.at("table");
          auto rows = db.query("SELECT id FROM " + table + " WHERE uid = ?",
                               {ref.at("uid").get<std::string>()});
          params.at(std::stoul(index)) = rows.empty() ? sql::Value{} : rows[0].at(0);
        }
        try {
          db.query(entry["sql"].get<std::string>(), params);
        } catch (const sql::Duplicate&) {
          // Sent before (the answer was lost, or another process of the node sent it): kept once.
        }
      } catch (const sql::Unreachable&) {
        throw;
      } catch (const std::exception&) {
        make_private_dir(dir_ / "failed");
        fs::rename(file, dir_ / "failed" / file.filename());
        continue;
      }
      fs::remove(file);
      ++sent;
    }
  } catch (const sql::Unreachable&) {
    ::close(lock);
    throw;
  }
  ::close(lock);
  return sent;
}

std::optional<std::vector<sql::Row>> Outbox::cached(const std::string& name) const {
  const fs::path file = dir_ / "cache" / (name + ".json");
  if (!fs::exists(file)) return std::nullopt;
  nlohmann::json rows = parse_json_or_discarded(read_regular_file(file));
  if (rows.is_discarded() || !rows.is_array()) return std::nullopt;
  std::vector<sql::Row> out;
  for (const auto& r : rows) out.push_back(params_from_json(r));
  return out;
}

void Outbox::cache(const std::string& name, const std::vector<sql::Row>& rows) {
  make_private_dir(dir_ / "cache");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) out.push_back(to_json(r));
  write_file_atomic(dir_ / "cache" / (name + ".json"), out.dump());
}

}  // namespace regime
