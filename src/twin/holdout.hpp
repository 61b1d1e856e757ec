#pragma once
// A fixed split of sweep-table workloads into a seen part (constants and search settings are
// chosen on it) and a held-out part (only scored), so no figure in docs/twin.md is judged on the
// data that chose it.
#include <string>
#include <vector>

#include "trace/sweep_table.hpp"

namespace regime::twin {

// Whether (gpu, workload) is held out: the parity of a FNV-1a hash of "gpu/workload", so the
// split depends on nothing but the names (not on row order, values or file).
bool is_held_out(const std::string& gpu, const std::string& workload);

struct SweepSplit {
  std::vector<SweepRow> seen, held_out;
};
SweepSplit split_rows(const std::vector<SweepRow>& rows);

}  // namespace regime::twin
