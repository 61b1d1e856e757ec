#pragma once
// Nothing measured is lost: a sweep's or a study's results are written to a file of the state
// folder (STATE_DIR/results/) before the run store is asked to keep them, and the file stays
// wherever the store fails (a full disk, a lock held past the busy timeout, a corrupt file, a
// folder at the database's path); it is removed once the store holds them. The command then prints
// its results as usual, says what failed and where they are kept, and exits non-zero.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "store/database_location.hpp"
#include "store/run_store.hpp"

namespace regime::session {

// The run store failed to keep a command's results.
struct StoreFailure {
  std::string what;          // the store's error: "run database ... is locked by ..."
  std::string results_file;  // where the results are kept; empty when that failed too
  std::string file_error;    // why the file could not be written (empty when it was)
};

// "not kept in the run database: WHAT; the results are kept in FILE" (or why they could not be).
std::string store_failure_text(const StoreFailure& f);
nlohmann::json to_json(const StoreFailure& f);

// A new results file name for this process: KIND-YYYYMMDDTHHMMSSZ-PID-N.json.
std::string new_results_file_name(const std::string& kind);

// The run store of one command, opened where it first keeps something, and the files that hold
// what it could not keep. Once the store has failed, the command's later results go to files
// only (a lock is not waited for twice).
class ResultsKeeper {
 public:
  explicit ResultsKeeper(DatabaseLocation db) : db_(std::move(db)) {}

  // Writes `results` as STATE_DIR/results/`file_name` (replacing what an earlier call under the
  // same name wrote), then runs `store_it` on the run store. Returns nothing when the store kept
  // them (the file is then removed), else the failure, the file named in it. Only the store's
  // Error is caught: a failure of `store_it`'s own making is not the store's.
  std::optional<StoreFailure> keep(const std::string& file_name, const nlohmann::json& results,
                                   const std::function<void(RunStore&)>& store_it);
  // The store, opened now if it is not yet (Error as RunStore's).
  RunStore& store();

 private:
  DatabaseLocation db_;
  std::optional<RunStore> store_;
  std::optional<std::string> failed_;  // the store's first error in this command
};

}  // namespace regime::session
