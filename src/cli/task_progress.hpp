#pragma once
// The one progress line of every long command (probe, sweep, study, control): elapsed and
// remaining time, and a bar by time (a run of known length) or by probes (a sweep's caps).
// format_task_progress draws it for all; a probe's ProgressLine (cli/progress.hpp) draws it from
// the probe's samples, TaskProgressLine below for the others. Drawn on stderr only when it is a
// terminal (progress_wanted), redrawn once a second by its own thread, coloured unless NO_COLOR is
// set; lines printed through it appear above the bar.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace regime::cli {

struct TaskProgress {
  std::string label;  // "sweep", "study", "control"
  double elapsed_s = 0;
  std::optional<double> total_s;  // a run of known length: the bar by time
  size_t done = 0;                // units finished (probes)
  std::optional<size_t> total;    // the most units there will be: the bar by units
  std::string unit = "probes";
  std::string note;  // the latest news, e.g. "400 W: 1.23 J/step"
  bool color = false;
};

// "sweep  3/8 probes [#####.....]  38%  1:05 elapsed  up to 1:48 left  400 W: 1.23 J/step" in
// at most `width` columns (the bar shrinks first, then the tail is cut). With total_s the time
// left is what remains of it; with units it is the mean time per unit so far times the units
// left, an upper bound ("up to": a search may stop early). Pure.
std::string format_task_progress(const TaskProgress& p, size_t width);

// "1:05", "12:00", "1:02:03".
std::string clock_text(double seconds);

// Whether to colour: the stream a terminal and NO_COLOR unset or empty (https://no-color.org).
bool color_wanted(std::FILE* stream);

class TaskProgressLine {
 public:
  TaskProgressLine(std::FILE* stream, bool enabled, std::string label);
  ~TaskProgressLine();  // stops the redraws and clears the line
  TaskProgressLine(const TaskProgressLine&) = delete;
  TaskProgressLine& operator=(const TaskProgressLine&) = delete;
  bool enabled() const { return enabled_; }

  void set_total_time(double seconds);
  void set_total_units(size_t total);
  // One more unit finished, with its news for the line.
  void unit_done(const std::string& note);
  // Prints `text` (a whole line, with its newline) above the bar; to the stream as it is when
  // the bar is off.
  void print(const std::string& text);
  void stop();

 private:
  void draw_locked();
  void clear_locked();
  std::FILE* stream_;
  bool enabled_;
  TaskProgress state_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool drawn_ = false;
  bool stopping_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread ticker_;
};

}  // namespace regime::cli
