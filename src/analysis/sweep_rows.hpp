#pragma once
// Sweep-table rows (recorded data, src/trace/) as Measurements and back: a row is one measured cap.
#include <string>

#include "analysis/measurement.hpp"
#include "trace/sweep_table.hpp"

namespace regime {

// The row as a Measurement of one unit of work (its CI, when the row has one).
Measurement to_measurement(const SweepRow& row);
// A row from a Measurement (energy per step; CI half-widths from the intervals when they exist).
SweepRow to_sweep_row(const std::string& workload, const std::string& gpu, double cap_W,
                      const Measurement& m, const std::string& unit);

}  // namespace regime
