#include "common/shell.hpp"

#include <gtest/gtest.h>

namespace regime {
namespace {

TEST(Shell, PlainArgumentsStayAsTheyAre) {
  EXPECT_EQ(shell_quote("python3"), "python3");
  EXPECT_EQ(shell_quote("--caps=300,250"), "--caps=300,250");
}

TEST(Shell, SpecialArgumentsAreSingleQuotedAndQuotesEscaped) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(command_line({"sh", "-c", "echo $HOME"}), "sh -c 'echo $HOME'");
}

}  // namespace
}  // namespace regime
