#include "cli/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

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

std::string format_probe_progress(const session::ProbeProgress& p, size_t width) {
  const double total_s = std::max(p.total_s, 0.0);
  const double elapsed_s = std::clamp(p.elapsed_s, 0.0, total_s > 0 ? total_s : p.elapsed_s);
  const double fraction = total_s > 0 ? elapsed_s / total_s : 0;
  const std::string head = fmt::format("probe {:>{}.0f}/{:.0f} s", elapsed_s,
                                       fmt::format("{:.0f}", total_s).size(), total_s);
  std::string tail = fmt::format(" {:3.0f}%  {:.0f} s left  {} steps", fraction * 100,
                                 std::ceil(total_s - elapsed_s), thousands(p.steps));
  tail += p.power_W ? fmt::format("  {:.0f} W", *p.power_W) : std::string("  - W");
  tail += p.temp_C ? fmt::format("  {:.0f} C", *p.temp_C) : std::string("  - C");
  // The bar takes what the text leaves, between 10 and 30 cells; none when even that is too much.
  const size_t text = head.size() + tail.size() + 3;
  std::string line = head;
  if (width >= text + 10) {
    const size_t cells = std::min<size_t>(30, width - text);
    const auto done = static_cast<size_t>(std::lround(fraction * double(cells)));
    line += " [" + std::string(done, '#') + std::string(cells - done, '.') + "]";
  }
  line += tail;
  if (line.size() > width) line.resize(width);
  return line;
}

bool progress_wanted(std::FILE* stream, bool quiet) {
  if (quiet || !::isatty(::fileno(stream))) return false;
  const char* term = std::getenv("TERM");
  return !(term && std::strcmp(term, "dumb") == 0);
}

ProgressLine::ProgressLine(std::FILE* stream, bool enabled) : stream_(stream), enabled_(enabled) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const session::ProbeProgress& p) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - *last_ < std::chrono::seconds(1)) return;
  last_ = now;
  // One column short of the width, so the terminal never wraps the line.
  redraw_line(stream_, format_probe_progress(p, terminal_width(stream_) - 1), drawn_);
}

void ProgressLine::clear() { erase_line(stream_, drawn_); }

}  // namespace regime::cli
