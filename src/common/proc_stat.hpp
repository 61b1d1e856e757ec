#pragma once
// One process's /proc/PID/stat, read once for every caller: the journal's "is the guard that wrote
// this still running" and the process tree's parents.
#include <cstdint>
#include <optional>
#include <string_view>

namespace regime {

// The fields of /proc/PID/stat that Regime reads.
struct ProcStat {
  char state = '?';          // field 3: R, S, D, Z (zombie), X (dead), ...
  int parent_pid = 0;        // field 4
  uint64_t start_ticks = 0;  // field 22: start time in clock ticks since boot; 0 when unreadable
};

// "PID (comm) state PPID ... starttime ...": the command name may hold spaces and parentheses, so
// the fields are counted from the last ')'. nullopt without a ')', a state or a parent. Pure.
std::optional<ProcStat> parse_proc_stat(std::string_view line);

// /proc/PID/stat of `pid`: nullopt when it cannot be read (the process has ended, no /proc).
std::optional<ProcStat> read_proc_stat(int pid);

}  // namespace regime
