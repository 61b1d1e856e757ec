#pragma once
// A fixed split of sweep-table workloads into a seen part (constants and search settings are
// chosen on it) and a held-out part (only scored), so no figure in docs/twin.md is judged on the
// data that chose it.
#include <string>
#include <vector>

#include "trace/sweep_table.hpp"
#include "twin/spec.hpp"

namespace regime::twin {

// Whether (gpu, workload) is held out: the parity of a FNV-1a hash of "gpu/workload", so the
// split depends on nothing but the names (not on row order, values or file).
bool is_held_out(const std::string& gpu, const std::string& workload);

struct SweepSplit {
  std::vector<SweepRow> seen, held_out;
};
SweepSplit split_rows(const std::vector<SweepRow>& rows);

// Another card's spec carried to a table's limits: its powers (and their bounds) scaled by the
// ratio of the highest limits, its thermal resistance by the inverse, its calibration dropped.
// The stand-in for a card the twin has no measured constants for, to score the fit where its
// physics is an estimate (docs/twin.md, "Where the twin is worse").
GpuSpec spec_scaled_to(const GpuSpec& other, double min_limit_W, double max_limit_W);

}  // namespace regime::twin
