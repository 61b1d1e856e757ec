#pragma once
// A command's process tree: the command and every process it started, found from the parent PID
// of each process in /proc. A training job's GPU work often runs in children (torchrun's workers,
// a shell's command), so what a job uses is what its whole tree uses.
#include <map>
#include <set>

namespace regime {

// `root` and every process below it in `parent_of` (PID -> parent PID). Pure.
std::set<int> descendants_of(int root, const std::map<int, int>& parent_of);

// Every process on the machine and its parent, from /proc/PID/stat (processes that end while it
// is read are left out).
std::map<int, int> read_parent_pids();

// `root` and every process below it, now; just {root} where /proc cannot be read.
std::set<int> process_tree(int root);

}  // namespace regime
