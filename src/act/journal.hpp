#pragma once
// The power-limit journal: before Regime first changes a physical GPU's limit it writes the
// original here (state dir, atomic write + fsync), so that a crash or `kill -9` can always be
// undone by `regime restore` or by the next actuating command. One file, guarded by a lock file
// against concurrent regime processes. Format: docs/safety.md.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace regime {

struct JournalEntry {
  std::string device;  // URI that opened it, e.g. "nvml:0"
  std::string uuid;    // the GPU's UUID: indexes can change across reboots, UUIDs do not
  double original_limit_W = 0;
  int pid = 0;                   // the regime process that changed it
  uint64_t pid_start_ticks = 0;  // its start time (/proc/PID/stat), to tell a reused pid apart
  double time_unix_s = 0;        // when the original was recorded
  bool kept = false;             // the current cap was left on purpose (`limit set`, `--apply`)
};

struct Journal {
  std::vector<JournalEntry> entries;
  // The entry for a GPU (by uuid; by device URI when the uuid is empty), or nullptr.
  JournalEntry* find(const std::string& uuid, const std::string& device);
};

nlohmann::json to_json(const Journal& journal);
// Error Parse naming `source` and the bad entry.
Journal journal_from_json(const nlohmann::json& j, const std::string& source);

// <state dir>/power-limits.journal.json
std::filesystem::path journal_path();

// The journal as on disk (empty if there is no file). Takes the lock while reading.
Journal read_journal();
// Runs `change` on the journal under an exclusive lock (flock on <journal>.lock) and writes the
// result back atomically when it returns true; an empty journal removes the file. Not re-entrant.
void update_journal(const std::function<bool(Journal&)>& change);

// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), 0 if unknown.
uint64_t process_start_ticks(int pid);
// True if `pid` runs and (where known) started at `start_ticks`: a dead owner's entry is leftover.
bool process_alive(int pid, uint64_t start_ticks);

}  // namespace regime
