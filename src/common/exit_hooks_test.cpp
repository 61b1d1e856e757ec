#include "common/exit_hooks.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace regime {
namespace {

TEST(ExitHooks, RunInOrderUntilRemovedAndAThrowingOneStopsNoOther) {
  std::vector<int> ran;
  int a = add_exit_hook([&] { ran.push_back(1); });
  int b = add_exit_hook([] { throw std::runtime_error("x"); });
  int c = add_exit_hook([&] { ran.push_back(3); });
  run_exit_hooks();
  EXPECT_EQ(ran, (std::vector<int>{1, 3}));
  remove_exit_hook(a);
  remove_exit_hook(b);
  run_exit_hooks();
  EXPECT_EQ(ran, (std::vector<int>{1, 3, 3}));
  remove_exit_hook(c);
}

}  // namespace
}  // namespace regime
