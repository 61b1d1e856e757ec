// A command's process tree from /proc: the pure walk over parent PIDs, and a real tree of
// processes started here.
#include "run/process_tree.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace regime {
namespace {

TEST(ProcessTree, DescendantsFollowEveryGenerationAndNothingElse) {
  // 1 -> 10 -> 11 -> 12, 10 -> 13; 1 -> 20 (another branch)
  const std::map<int, int> parent_of = {{10, 1}, {11, 10}, {12, 11}, {13, 10}, {20, 1}};
  EXPECT_EQ(descendants_of(10, parent_of), (std::set<int>{10, 11, 12, 13}));
  EXPECT_EQ(descendants_of(12, parent_of), (std::set<int>{12}));
  EXPECT_EQ(descendants_of(99, parent_of), (std::set<int>{99}));  // unknown: itself only
}

TEST(ProcessTree, AShellsGrandchildIsInItsTree) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execlp("sh", "sh", "-c", "sleep 30 & sleep 30; wait", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::set<int> tree;
  for (int i = 0; i < 200 && tree.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    tree = process_tree(child);
  }
  EXPECT_EQ(tree.size(), 3u);  // sh and its two sleeps
  EXPECT_TRUE(tree.count(child));
  EXPECT_FALSE(tree.count(getpid()));  // the parent is not below its child
  kill(-child, SIGKILL);
  kill(child, SIGKILL);
  for (int pid : tree) kill(pid, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace regime
