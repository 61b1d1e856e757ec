#include "cli/progress.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "cli/task_progress.hpp"

namespace regime::cli {
namespace {

session::ProbeProgress at(double elapsed_s) {
  session::ProbeProgress p;
  p.elapsed_s = elapsed_s;
  p.total_s = 60;
  p.steps = 1234;
  p.power_W = 652.4;
  p.temp_C = 61.2;
  return p;
}

TEST(ProbeProgressLine, SaysElapsedTotalLeftStepsPowerAndTemperature) {
  const std::string line = format_probe_progress(at(12), 100);
  EXPECT_NE(line.find("probe 0:12/1:00 ["), std::string::npos) << line;
  EXPECT_NE(line.find("]  20%  0:12 elapsed  0:48 left  1,234 steps  652 W  61 C"),
            std::string::npos)
      << line;
  EXPECT_LE(line.size(), 100u);
}

TEST(ProbeProgressLine, TheBarFillsWithTimeAndNeverPassesTheTotal) {
  const std::string start = format_probe_progress(at(0), 120);
  const std::string half = format_probe_progress(at(30), 120);
  const std::string over = format_probe_progress(at(75), 120);
  EXPECT_EQ(start.find('#'), std::string::npos) << start;
  EXPECT_EQ(std::count(half.begin(), half.end(), '#'), 15) << half;
  EXPECT_EQ(std::count(over.begin(), over.end(), '.'), 0) << over;
  EXPECT_NE(over.find("probe 1:00/1:00"), std::string::npos) << over;
  EXPECT_NE(over.find("100%  1:15 elapsed  0:00 left"), std::string::npos) << over;
}

TEST(ProbeProgressLine, NarrowTerminalsDropTheBarThenCutTheTail) {
  const std::string narrow = format_probe_progress(at(12), 60);
  EXPECT_EQ(narrow.find('['), std::string::npos) << narrow;
  EXPECT_LE(narrow.size(), 60u);
  EXPECT_EQ(format_probe_progress(at(12), 20).size(), 20u);
}

// The probe's line is the sweep's, study's and control's: the same renderer, the same words.
TEST(ProbeProgressLine, IsTheLineEveryLongCommandDraws) {
  TaskProgress sweep;
  sweep.label = "probe";
  sweep.elapsed_s = 12;
  sweep.total_s = 60;
  sweep.note = "1,234 steps  652 W  61 C";
  EXPECT_EQ(format_probe_progress(at(12), 100), format_task_progress(sweep, 100));
  EXPECT_EQ(probe_task(at(12)).note, sweep.note);
}

TEST(ProbeProgressLine, MissingReadingsShowADash) {
  session::ProbeProgress p = at(5);
  p.power_W.reset();
  p.temp_C.reset();
  const std::string line = format_probe_progress(p, 120);
  EXPECT_NE(line.find("  - W  - C"), std::string::npos) << line;
}

TEST(ProbeProgressLine, NotDrawnIntoAPipeOrWithQuiet) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::FILE* w = ::fdopen(fds[1], "w");
  EXPECT_FALSE(progress_wanted(w, false));
  EXPECT_FALSE(progress_wanted(w, true));
  {
    ProgressLine line(w, progress_wanted(w, false));
    line.update(at(1));
  }
  std::fclose(w);
  char buf[16];
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 0);  // nothing was written
  ::close(fds[0]);
}

}  // namespace
}  // namespace regime::cli
