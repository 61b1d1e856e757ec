#include "session/sweep/results_keeper.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/paths.hpp"

namespace regime::session {

std::string store_failure_text(const StoreFailure& f) {
  const std::string kept = f.results_file.empty()
                               ? "the results could not be kept in a file either (" + f.file_error +
                                     "): they are only in this output"
                               : "the results are kept in " + f.results_file;
  return "not kept in the run database: " + f.what + "; " + kept;
}

namespace {
nlohmann::json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}
}  // namespace

nlohmann::json to_json(const StoreFailure& f) {
  return {{"error", f.what},
          {"results_file", text_or_null(f.results_file)},
          {"file_error", text_or_null(f.file_error)}};
}

std::string new_results_file_name(const std::string& kind) {
  static std::atomic<int> made{0};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char stamp[32] = {};
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  return fmt::format("{}-{}-{}-{}.json", kind, stamp, ::getpid(), ++made);
}

RunStore& ResultsKeeper::store() {
  if (!store_) store_.emplace(db_);
  return *store_;
}

namespace {

// The file: what the command printed, the database it was meant for and, once known, what the
// database said.
std::string results_file_text(const nlohmann::json& results, const std::string& db,
                              const std::optional<std::string>& failed) {
  nlohmann::json file = results;
  file["db"] = db;
  file["store_failed"] = failed ? nlohmann::json(*failed) : nlohmann::json(nullptr);
  return file.dump(2) + "\n";
}

}  // namespace

std::optional<StoreFailure> ResultsKeeper::keep(const std::string& file_name,
                                                const nlohmann::json& results,
                                                const std::function<void(RunStore&)>& store_it) {
  // As a person finds it again: a file by its absolute path, a server by its URI.
  const std::string db =
      db_.is_server() ? db_.path().string() : std::filesystem::absolute(db_.path()).string();
  StoreFailure f;
  std::optional<SafeDir> dir;
  // First, before the store can fail or hang: a kill while a lock is waited for loses nothing.
  try {
    dir.emplace(SafeDir::open(state_dir()).subdir("results"));
    dir->write_atomic(file_name, results_file_text(results, db, failed_), 0600);
    f.results_file = (dir->path() / file_name).string();
  } catch (const Error& e) {
    f.file_error = e.what();
  }
  if (!failed_) {
    try {
      store_it(store());
    } catch (const Error& e) {
      failed_ = e.what();
      store_.reset();
    }
  }
  if (!failed_) {
    try {
      if (!f.results_file.empty()) dir->remove(file_name);  // the store holds them now
    } catch (const Error&) {  // a file left over is harmless: it names the database
    }
    return std::nullopt;
  }
  f.what = *failed_;
  if (!f.results_file.empty()) {
    try {
      dir->write_atomic(file_name, results_file_text(results, db, failed_), 0600);
    } catch (const Error&) {  // the file written first stays, without the store's error
    }
  }
  return f;
}

}  // namespace regime::session
