#include "cli/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cli/task_progress.hpp"

namespace regime::cli {

namespace {

std::string thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace

size_t terminal_width(std::FILE* stream) {
  winsize ws{};
  if (::ioctl(::fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void redraw_line(std::FILE* stream, const std::string& line, bool& drawn) {
  std::fprintf(stream, "\r%s\x1b[K", line.c_str());
  std::fflush(stream);
  drawn = true;
}

void erase_line(std::FILE* stream, bool& drawn) {
  if (!drawn) return;
  std::fputs("\r\x1b[K", stream);
  std::fflush(stream);
  drawn = false;
}

TaskProgress probe_task(const session::ProbeProgress& p) {
  TaskProgress t;
  t.label = "probe";
  t.elapsed_s = std::max(p.elapsed_s, 0.0);
  t.total_s = std::max(p.total_s, 0.0);
  t.note = thousands(p.steps) + " steps";
  t.note += p.power_W ? fmt::format("  {:.0f} W", *p.power_W) : std::string("  - W");
  t.note += p.temp_C ? fmt::format("  {:.0f} C", *p.temp_C) : std::string("  - C");
  return t;
}

std::string format_probe_progress(const session::ProbeProgress& p, size_t width) {
  return format_task_progress(probe_task(p), width);
}

bool progress_wanted(std::FILE* stream, bool quiet) {
  if (quiet || !::isatty(::fileno(stream))) return false;
  const char* term = std::getenv("TERM");
  return !(term && std::strcmp(term, "dumb") == 0);
}

ProgressLine::ProgressLine(std::FILE* stream, bool enabled)
    : stream_(stream), enabled_(enabled), color_(enabled && color_wanted(stream)) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const session::ProbeProgress& p) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - *last_ < std::chrono::seconds(1)) return;
  last_ = now;
  // One column short of the width, so the terminal never wraps the line.
  TaskProgress t = probe_task(p);
  t.color = color_;
  redraw_line(stream_, format_task_progress(t, terminal_width(stream_) - 1), drawn_);
}

void ProgressLine::clear() { erase_line(stream_, drawn_); }

}  // namespace regime::cli
