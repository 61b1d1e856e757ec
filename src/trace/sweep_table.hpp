#pragma once
// Sweep tables (docs/contracts.md): recorded data, one row per measured cap of a GPU + workload
// pair. The one parser of them: the planner (recommend, replay:) and the twin (sim fit) both read
// them here.
// Required columns `workload,gpu,cap_W,time_s,avg_power_W,unit`; optional `energy_J`, `time_ci_s`,
// `energy_ci_J`, `steps`, `time_lo_s`, `time_hi_s`, `energy_lo_J`, `energy_hi_J`, `window`. The
// *_ci_* columns are half-widths of a 95% confidence interval around the value of the row (time_s,
// and energy_J or time_s x avg_power_W); *_lo_*/*_hi_* give the interval's ends exactly (a
// bootstrap interval need not be symmetric) and win over the half-width. `window` is empty (or
// "first") for a cap's measurement and "again" for the default limit measured again at the end of
// a live sweep: such a row is kept apart (SweepTable::again), so that deciding the table again
// uses both default windows as the live decision did (plan/decision.hpp). `default_limit_W` names
// the default limit (the same on all of a workload's rows, with a row at that cap); without it
// the default is the highest cap, as sweeps that start from the default have it.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace regime {

struct SweepRow {
  std::string workload;
  std::string gpu;
  double cap_W = 0;
  double time_s = 0;  // per unit of work
  double avg_power_W = 0;
  std::string unit;                   // "epoch", "step", ...
  std::optional<double> energy_J;     // per unit; absent: time_s x avg_power_W
  std::optional<double> time_ci_s;    // 95% CI half-width
  std::optional<double> energy_ci_J;  // 95% CI half-width
  std::optional<int> steps;
  // The 95% interval's ends, when known exactly (both of a pair, or neither).
  std::optional<double> time_lo_s, time_hi_s, energy_lo_J, energy_hi_J;
  std::optional<double> default_limit_W;  // the card's default limit, where the table names it
  bool again = false;  // window "again": the default measured again at the end of a live sweep
  int line = 0;        // 1-based line in the source file (0 when built in code)

  double energy_per_unit_J() const { return energy_J ? *energy_J : time_s * avg_power_W; }
};

struct SweepTable {
  std::string source;  // file name, for messages
  std::vector<SweepRow> rows;
  std::vector<SweepRow> again;  // rows of window "again", each beside a row at its cap

  // Distinct workload names in the order they first appear.
  std::vector<std::string> workloads() const;
  // The rows of one workload sorted by cap, highest first; Error NotFound naming the workloads
  // there are when the table has none of `workload`.
  std::vector<SweepRow> rows_for(const std::string& workload) const;
};

// Parses CSV text as spreadsheets write it (a UTF-8 byte-order mark, CRLF line ends, quoted
// fields holding commas or doubled quotes); Error Parse naming source, line and column (in
// characters) for a missing column, a bad number, a wrong cell count, an unclosed quote or a
// duplicate (workload, gpu, cap_W, window), an interval end without its pair or a row of window
// "again" with no row at its cap.
SweepTable parse_sweep_table(std::string_view text, const std::string& source);
// The default limit of one workload's rows: the one they name (default_limit_W), else the highest
// cap (a sweep from the default down, as Zeus's tables are).
double default_limit_W(const std::vector<SweepRow>& rows);

// Reads a file; Error Io when it cannot be read.
SweepTable read_sweep_table(const std::filesystem::path& path);

// CSV text with the required columns and those optional columns that some row carries; names
// with commas, quotes or outer blanks are quoted, so the text parses back to the same rows (rows
// with `again` set go to SweepTable::again).
std::string format_sweep_table(const std::vector<SweepRow>& rows);

}  // namespace regime
