#include "cli/task_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cli/progress.hpp"

namespace regime::cli {

namespace {

// The first draw waits this long: a command done sooner (a simulated run) never draws.
constexpr double kFirstDraw_s = 1.0;

}  // namespace

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(std::lround(std::max(seconds, 0.0)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string format_task_progress(const TaskProgress& p, size_t width) {
  std::optional<double> fraction, left_s;
  bool bound = false;
  std::string head = p.label;
  if (p.total_s && *p.total_s > 0) {
    fraction = std::clamp(p.elapsed_s / *p.total_s, 0.0, 1.0);
    left_s = std::max(*p.total_s - p.elapsed_s, 0.0);
    head += fmt::format(" {}/{}", clock_text(std::min(p.elapsed_s, *p.total_s)),
                        clock_text(*p.total_s));
  } else if (p.total && *p.total > 0) {
    const size_t done = std::min(p.done, *p.total);
    fraction = double(done) / double(*p.total);
    if (done > 0) {
      left_s = p.elapsed_s / double(done) * double(*p.total - done);
      bound = true;
    }
    head += fmt::format(" {:>{}}/{} {}", done, std::to_string(*p.total).size(), *p.total, p.unit);
  } else if (p.done > 0) {
    head += fmt::format(" {} {}", p.done, p.unit);
  }
  std::string tail;
  if (fraction) tail += fmt::format(" {:3.0f}%", *fraction * 100);
  tail += fmt::format("  {} elapsed", clock_text(p.elapsed_s));
  if (left_s) tail += fmt::format("  {}{} left", bound ? "up to " : "", clock_text(*left_s));
  if (!p.note.empty()) tail += "  " + p.note;
  std::string line = head;
  const size_t text = head.size() + tail.size() + 3;
  if (fraction && width >= text + 10) {
    const size_t cells = std::min<size_t>(30, width - text);
    const auto done = static_cast<size_t>(std::lround(*fraction * double(cells)));
    const std::string filled(done, '#'), empty(cells - done, '.');
    line += p.color ? " [\x1b[32m" + filled + "\x1b[0m" + empty + "]" : " [" + filled + empty + "]";
  }
  line += tail;
  // Cut to the width counting only what shows (the colour codes take no columns).
  const size_t hidden = p.color && line.find("\x1b[") != std::string::npos ? 9 : 0;
  if (line.size() - hidden > width) line.resize(width + hidden);
  return line;
}

bool color_wanted(std::FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  return (no_color == nullptr || *no_color == '\0') && ::isatty(::fileno(stream));
}

TaskProgressLine::TaskProgressLine(std::FILE* stream, bool enabled, std::string label)
    : stream_(stream), enabled_(enabled) {
  state_.label = std::move(label);
  state_.color = enabled && color_wanted(stream);
  if (!enabled_) return;
  ticker_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      draw_locked();
      cv_.wait_for(lock, std::chrono::seconds(1));
    }
  });
}

TaskProgressLine::~TaskProgressLine() { stop(); }

void TaskProgressLine::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    clear_locked();
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void TaskProgressLine::set_total_time(double seconds) {
  std::lock_guard lock(mu_);
  state_.total_s = seconds;
}

void TaskProgressLine::set_total_units(size_t total) {
  std::lock_guard lock(mu_);
  state_.total = total;
}

void TaskProgressLine::unit_done(const std::string& note) {
  std::lock_guard lock(mu_);
  ++state_.done;
  state_.note = note;
  draw_locked();
}

void TaskProgressLine::print(const std::string& text) {
  std::lock_guard lock(mu_);
  const bool was_drawn = drawn_;
  clear_locked();
  std::fputs(text.c_str(), stream_);
  if (was_drawn && !stopping_) draw_locked();
  std::fflush(stream_);
}

void TaskProgressLine::draw_locked() {
  if (!enabled_ || stopping_) return;
  state_.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (state_.elapsed_s < kFirstDraw_s) return;
  // One column short of the width, so the terminal never wraps the line.
  redraw_line(stream_, format_task_progress(state_, terminal_width(stream_) - 1), drawn_);
}

void TaskProgressLine::clear_locked() { erase_line(stream_, drawn_); }

}  // namespace regime::cli
