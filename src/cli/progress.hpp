#pragma once
// A probe's progress line on stderr, drawn by the renderer every long command's line shares
// (cli/task_progress.hpp), from the probe's own samples: drawn only when stderr is a terminal
// (never into --json output, a pipe or a log file), not with --quiet, and at most once a second.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "session/probe/probe.hpp"

namespace regime::cli {

struct TaskProgress;

// A probe's progress as every long command's line shows it (format_task_progress, the one
// renderer): its run by time, and its steps, power and temperature as the line's news.
TaskProgress probe_task(const session::ProbeProgress& p);
// "probe 0:12/1:00 [#####.....]  20%  0:12 elapsed  0:48 left  1,234 steps  652 W  61 C", in at
// most `width` columns, uncoloured. Pure.
std::string format_probe_progress(const session::ProbeProgress& p, size_t width);

// The drawing both progress lines share. Columns of the terminal behind `stream` (80 when it
// says none).
size_t terminal_width(std::FILE* stream);
// Draws `line` over the current line in place (carriage return, erase to its end); `drawn` is
// then true.
void redraw_line(std::FILE* stream, const std::string& line, bool& drawn);
// Erases the line drawn in place, if `drawn`, so that what follows starts on a clean one.
void erase_line(std::FILE* stream, bool& drawn);

// Whether to draw on this stream: a terminal that is not "dumb", and not --quiet.
bool progress_wanted(std::FILE* stream, bool quiet);

class ProgressLine {
 public:
  ProgressLine(std::FILE* stream, bool enabled);
  ~ProgressLine();  // clears the line, so what follows starts on a clean one
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  bool enabled() const { return enabled_; }
  // Redraws the line when a second has passed since the last draw (or on the first call).
  void update(const session::ProbeProgress& p);
  void clear();

 private:
  std::FILE* stream_;
  bool enabled_;
  bool color_;
  bool drawn_ = false;
  std::optional<std::chrono::steady_clock::time_point> last_;
};

}  // namespace regime::cli
