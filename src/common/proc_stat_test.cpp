#include "common/proc_stat.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

namespace regime {
namespace {

TEST(ProcStat, CountsFieldsFromTheLastParenthesis) {
  // A command name with a space and a ')' of its own.
  const auto s = parse_proc_stat(
      "4242 (py (x) y) S 17 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 3 0 987654 1000 10");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->parent_pid, 17);
  EXPECT_EQ(s->start_ticks, 987654u);
}

TEST(ProcStat, StartTimeIsZeroWhenTheLineStopsShort) {
  const auto s = parse_proc_stat("12 (sh) Z 1 12 12");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'Z');
  EXPECT_EQ(s->parent_pid, 1);
  EXPECT_EQ(s->start_ticks, 0u);
}

TEST(ProcStat, NothingWithoutParenthesisOrParent) {
  EXPECT_FALSE(parse_proc_stat("12 sh S 1").has_value());
  EXPECT_FALSE(parse_proc_stat("12 (sh) S").has_value());
  EXPECT_FALSE(parse_proc_stat("").has_value());
}

TEST(ProcStat, ReadsThisProcess) {
  const auto s = read_proc_stat(static_cast<int>(::getpid()));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->parent_pid, static_cast<int>(::getppid()));
  EXPECT_GT(s->start_ticks, 0u);
  EXPECT_FALSE(read_proc_stat(0).has_value());
}

}  // namespace
}  // namespace regime
