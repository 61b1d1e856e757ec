#include "cli/task_progress.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace regime::cli {
namespace {

TEST(TaskProgressLine, ClockText) {
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(65.4), "1:05");
  EXPECT_EQ(clock_text(3723), "1:02:03");
  EXPECT_EQ(clock_text(-3), "0:00");
}

TEST(TaskProgressLine, ByProbesSaysDoneTotalElapsedAndAnUpperBoundLeft) {
  TaskProgress p;
  p.label = "sweep";
  p.elapsed_s = 65;
  p.done = 3;
  p.total = 8;
  p.note = "last 400 W: 1.23 J/step";
  const std::string line = format_task_progress(p, 120);
  EXPECT_NE(line.find("sweep 3/8 probes ["), std::string::npos) << line;
  // 65 s for 3 probes: 5 more take up to 108 s.
  EXPECT_NE(line.find("]  38%  1:05 elapsed  up to 1:48 left  last 400 W: 1.23 J/step"),
            std::string::npos)
      << line;
  EXPECT_LE(line.size(), 120u);
}

TEST(TaskProgressLine, NothingLeftIsGuessedBeforeTheFirstProbe) {
  TaskProgress p;
  p.label = "sweep";
  p.elapsed_s = 4;
  p.total = 8;
  const std::string line = format_task_progress(p, 120);
  EXPECT_EQ(line.find("left"), std::string::npos) << line;
  EXPECT_NE(line.find("  0%  0:04 elapsed"), std::string::npos) << line;
}

TEST(TaskProgressLine, ByTimeFillsTheBarAndNeverPassesTheEnd) {
  TaskProgress p;
  p.label = "control";
  p.total_s = 300;
  p.elapsed_s = 150;
  std::string line = format_task_progress(p, 120);
  EXPECT_NE(line.find("control 2:30/5:00 ["), std::string::npos) << line;
  EXPECT_EQ(std::count(line.begin(), line.end(), '#'), std::count(line.begin(), line.end(), '.'));
  EXPECT_NE(line.find(" 50%  2:30 elapsed  2:30 left"), std::string::npos) << line;
  p.elapsed_s = 400;
  line = format_task_progress(p, 120);
  EXPECT_NE(line.find("control 5:00/5:00"), std::string::npos) << line;
  EXPECT_NE(line.find("100%  6:40 elapsed  0:00 left"), std::string::npos) << line;
}

TEST(TaskProgressLine, UnknownLengthShowsOnlyTheElapsedTime) {
  TaskProgress p;
  p.label = "study";
  p.elapsed_s = 12;
  EXPECT_EQ(format_task_progress(p, 120), "study  0:12 elapsed");
}

TEST(TaskProgressLine, ColourOnlyTheBarAndCutToTheVisibleWidth) {
  TaskProgress p;
  p.label = "sweep";
  p.elapsed_s = 10;
  p.done = 1;
  p.total = 2;
  p.color = true;
  const std::string line = format_task_progress(p, 80);
  EXPECT_NE(line.find("[\x1b[32m#"), std::string::npos) << line;
  EXPECT_NE(line.find("\x1b[0m."), std::string::npos) << line;
  p.color = false;
  EXPECT_EQ(format_task_progress(p, 80).find('\x1b'), std::string::npos);
  EXPECT_EQ(format_task_progress(p, 30).size(), 30u);
  p.color = true;
  p.note = std::string(200, 'x');
  // Too long for a bar: the bar goes first (and its colour with it), then the tail is cut.
  const std::string cut = format_task_progress(p, 100);
  EXPECT_EQ(cut.size(), 100u);
  EXPECT_EQ(cut.find('\x1b'), std::string::npos) << cut;
}

TEST(TaskProgressLine, NoColorAndPipesGetNoColour) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::FILE* w = ::fdopen(fds[1], "w");
  EXPECT_FALSE(color_wanted(w));
  {
    // Off: what is printed through it goes out unchanged, and nothing else.
    TaskProgressLine line(w, false, "sweep");
    line.set_total_units(3);
    line.unit_done("x");
    line.print("probe 300.0 W: 1 J/step\n");
  }
  std::fclose(w);
  char buf[256] = {};
  const ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(std::max<ssize_t>(n, 0))),
            "probe 300.0 W: 1 J/step\n");
}

}  // namespace
}  // namespace regime::cli
