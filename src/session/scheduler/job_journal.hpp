#pragma once
// The jobs a node's prolog began and its epilog has not ended yet, one file per job and node
// beside the power-limit journal (persistent: it survives a crash and a reboot). It names the run
// database the job was recorded in and the boot it began in, so that the restore at boot
// (`regime restore`) can end the record of a job the node lost by rebooting, whose epilog never
// ran; and the job's study process, if one runs, so that the epilog can stop it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/database_location.hpp"

namespace regime::session {

struct JobJournalEntry {
  std::string job_id;
  std::string node;
  DatabaseLocation db;  // where the job's record is
  std::string boot_id;  // current_boot_id() (common/paths.hpp) when the job began
  double began_unix_s = 0;
  // The job's study process (`regime job study`), 0 when none: its pid and its start time
  // (/proc/PID/stat), so that a pid reused by another process is never signalled.
  int study_pid = 0;
  uint64_t study_start_ticks = 0;
};

// DIR/jobs beside journal_dirs().journal (DIR/power-limits).
std::filesystem::path job_journal_dir();

// Writes (atomically) or replaces the entry of (job_id, node).
void put_job_entry(const JobJournalEntry& entry);
std::optional<JobJournalEntry> get_job_entry(const std::string& job_id, const std::string& node);
void remove_job_entry(const std::string& job_id, const std::string& node);
// Every entry, sorted by job and node; a file that cannot be read or parsed is skipped.
std::vector<JobJournalEntry> job_entries();

}  // namespace regime::session
