#include "session/exit_status.hpp"

#include <gtest/gtest.h>

namespace regime::session {
namespace {

// No signal was sent to this test process, so the workload's own status decides.
TEST(StoppedWorkloadExitStatus, IsTheWorkloadsFailingStatusElseOne) {
  EXPECT_EQ(stopped_workload_exit_status(WorkloadFailed("exited with status 3", 3)), 3);
  EXPECT_EQ(stopped_workload_exit_status(WorkloadFailed("ended before its steps", 0)), 1);
  EXPECT_EQ(stopped_workload_exit_status(WorkloadFailed("no status", std::nullopt)), 1);
}

}  // namespace
}  // namespace regime::session
