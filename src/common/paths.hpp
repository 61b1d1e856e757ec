#pragma once
#include <filesystem>
#include <optional>
#include <string>

// write_file_atomic lives with the other file helpers; included here for its existing callers.
#include "common/files.hpp"

namespace regime {

// Whether this process can change real GPUs' limits: effective uid 0, or CAP_SYS_ADMIN in its
// effective set (what NVML's set calls check). Its journals go to the system-wide place below,
// whatever the environment says about per-user directories, and it trusts only files no other
// user can have chosen.
bool running_privileged();

// Whether `capability` (CAP_*) is in this process's effective set.
bool has_effective_capability(int capability);

// State directory: $REGIME_STATE_DIR, else (as root) /var/lib/regime, else
// $XDG_STATE_HOME/regime, else ~/.local/state/regime. Holds the default run database and run
// traces (and the power-limit journals of unprivileged processes). Created on first use (mode
// 0700); refused (Error NoPermission) unless owned by the effective user and writable by no one
// else.
std::filesystem::path state_dir();

// Where the power-limit journal (one file per GPU) and its lock files live.
struct JournalDirs {
  std::filesystem::path journal;  // persistent: survives a crash and a reboot
  std::filesystem::path locks;    // may be volatile (/run)
  bool system_wide = false;       // the one place every privileged process shares
  bool from_override = false;     // named by REGIME_SYSTEM_STATE_DIR
};
// /var/lib/regime/power-limits and /run/regime/locks.
JournalDirs system_journal_dirs();
// Privileged: /var/lib/regime/power-limits and /run/regime/locks, shared by every root process
// whatever its environment, so two of them always see each other's changes.
// $REGIME_SYSTEM_STATE_DIR (tests) replaces both by DIR/power-limits and DIR/locks, privileged
// or not; the power-limit journal of real GPUs ignores it in privileged processes
// (act/journal.hpp, power_limit_journal_dirs). Unprivileged (a simulated or fake device; real NVML
// refuses such a user anyway): <state dir>/power-limits and <state dir>/locks.
JournalDirs journal_dirs();

// This boot of the machine: the kernel's random boot id (/proc/sys/kernel/random/boot_id), or the
// first line of the file $REGIME_BOOT_ID_FILE names (tests "reboot" a node by changing it). Empty
// when it cannot be read. What a process keeps across its restarts but not across a reboot (a
// job's caps, the jobs a node runs) is tagged with it.
std::string current_boot_id();

// Data directory with gpus/*.json: $REGIME_DATA_DIR, else found from where the running binary is
// (/proc/self/exe, find_data_dir), so an installed or moved tree works and no build path is
// compiled in. When nothing is found: the installed location, for messages to name.
std::filesystem::path data_dir();

// Where the spec files are for a binary in `exe_dir`: `../share/regime` when it holds gpus/ (the
// installed layout, bin/ beside share/), else the nearest `data` folder holding gpus/ in
// `exe_dir` or a folder above it (a build folder: each has a `data` link to the source tree's, and
// one inside the source tree also finds the tree's own).
std::optional<std::filesystem::path> find_data_dir(const std::filesystem::path& exe_dir);

}  // namespace regime
