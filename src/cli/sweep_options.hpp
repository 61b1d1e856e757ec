#pragma once
// Options that `regime sweep` and `regime study` share, declared once, and the progress line
// both print after each probe.
#include <CLI/CLI.hpp>

#include "cli/settings_options.hpp"
#include "cli/task_progress.hpp"
#include "session/site/target.hpp"

namespace regime::cli {

// --strategy, --objective (their text into `text`, for parse_sweep_settings),
// --settle-s, --probe-s, --db, --apply, --step-regex, --workload-as-root.
void add_sweep_settings(CLI::App* sub, session::SweepSettings& s, SweepSettingsText& text,
                        session::WorkloadSpec& w);

// --workload-as-root (probe, sweep, study): under sudo the command runs as the user who ran sudo
// unless this is given.
void add_workload_as_root(CLI::App* sub, session::WorkloadSpec& w);

// "probe 250.0 W: 1.234 J/step, 0.01 s/step, 245.1 W, 120 steps\n".
std::string probe_result_line(const plan::ProbeResult& p);

// Wires a sweep's progress into `s`: the bar counts probes against the most there can be, and
// with `print_lines` each probe's line is printed above it (on stderr, bar or not).
void attach_progress(session::SweepSettings& s, TaskProgressLine& line, bool print_lines);

}  // namespace regime::cli
