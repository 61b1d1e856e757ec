#pragma once
// The power-limit journal: before Regime first changes a physical GPU's limit it writes the
// original here, so that a crash or `kill -9` can always be undone by `regime restore` or by the
// next actuating command. One file and one lock per GPU (named by its UUID), in the place
// journal_dirs() names: for privileged processes one system-wide place, whatever their
// environment. Format and rules: docs/safety.md.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/paths.hpp"

namespace regime {

struct JournalEntry {
  std::string device;           // URI that opened it, e.g. "nvml:0"
  std::string uuid;             // the GPU's UUID: indexes can change across reboots, UUIDs do not
  double original_limit_W = 0;  // the limit before Regime first changed it
  // The regime process changing the GPU now (0: none, e.g. a cap left on purpose). While it
  // runs, no other regime process touches the GPU; once it is gone the entry is a leftover.
  int pid = 0;
  uint64_t pid_start_ticks = 0;  // its start time (/proc/PID/stat), to tell a reused pid apart
  double time_unix_s = 0;        // when the original was recorded
  bool kept = false;             // the current cap was left on purpose (`limit set`, `--apply`)
  // What the process `pid` puts back when it ends, when that is not the original: a guard
  // working on top of a kept cap restores the kept cap.
  std::optional<double> restore_to_W;
};

struct Journal {
  std::vector<JournalEntry> entries;
  // The entry for a GPU (by uuid; by device URI when the uuid is empty), or nullptr.
  JournalEntry* find(const std::string& uuid, const std::string& device);
};

nlohmann::json to_json(const JournalEntry& entry);
nlohmann::json to_json(const Journal& journal);
// One entry from its JSON object. Error Parse naming `source` and the bad field; numbers are
// checked (a pid is a whole number in range, a limit finite and positive) before conversion.
JournalEntry journal_entry_from_json(const nlohmann::json& j, const std::string& source);
// One GPU's journal file as text. Error Parse naming source:line:column for malformed JSON.
JournalEntry parse_journal_entry(std::string_view text, const std::string& source);

// The file name (without extension) of a GPU's journal and lock: its UUID, or "device-" and the
// URI when there is none, with any byte outside [A-Za-z0-9_-] written as %XX.
std::string journal_key(const std::string& uuid, const std::string& device);

// Where power-limit journals and their locks live: common/paths.hpp's journal_dirs(), except that
// a privileged process on real GPUs ignores REGIME_SYSTEM_STATE_DIR (said once on stderr): two
// root processes with different environments must still share one journal per GPU, or one could
// record the other's cap as the original. Only a test double NVML (tests/fake_nvml) may move it.
JournalDirs power_limit_journal_dirs();
// For test programs whose GPUs live in memory (tests/support/test_main.cpp):
// REGIME_SYSTEM_STATE_DIR is then honoured in this process as for a test double NVML. The shipped
// programs never call it.
void allow_journal_dir_override_in_this_process();

// The directory holding the journal files (power_limit_journal_dirs().journal).
std::filesystem::path journal_path();

// Exclusive access to one GPU's journal entry across processes and threads: an flock on its lock
// file, held for the lifetime of the object (waits up to 30 s, then Error Io naming the file).
// Read, change the GPU, write or remove, all under one lock: no other regime process can see a
// changed limit without its journal entry.
class GpuJournalLock {
 public:
  GpuJournalLock(const std::string& uuid, const std::string& device);
  explicit GpuJournalLock(const std::string& key);
  ~GpuJournalLock();
  GpuJournalLock(const GpuJournalLock&) = delete;
  GpuJournalLock& operator=(const GpuJournalLock&) = delete;

  // The entry on disk, nullopt when there is none. Error Io when the file exists but cannot be
  // read, and Error Parse when it is malformed: an unreadable journal is never taken as empty.
  std::optional<JournalEntry> read() const;
  void write(const JournalEntry& entry) const;
  void remove() const;
  const std::string& key() const { return key_; }

 private:
  std::string key_;
  int fd_ = -1;
};

// The keys of every GPU with a journal file, sorted.
std::vector<std::string> journal_keys();

// Every entry on disk, each read under its GPU's lock (empty when there are none).
Journal read_journal();
// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), 0 if unknown.
uint64_t process_start_ticks(int pid);
// True if `pid` runs and started at `start_ticks`: a dead owner's entry is leftover. An entry
// without a start time (0) counts as dead wherever start times can be read: no guard writes one.
bool process_alive(int pid, uint64_t start_ticks);

}  // namespace regime
