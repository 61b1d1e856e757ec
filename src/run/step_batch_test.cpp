// Step markers in batches: one datagram carrying several steps, each with its own times, so a
// helper can send a few datagrams a second and the sampler drain them once a second within the
// socket's small queue of datagrams (net.unix.max_dgram_qlen, often 10).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "run/marker_workload.hpp"
#include "run/step_marker.hpp"
#include "support/temp_dir.hpp"

namespace regime {
namespace {

TEST(StepBatch, ParsesEveryLineOfADatagramWithItsOwnTimes) {
  auto b = parse_step_batch("step 1 10.0 10.1\nstep 2 10.1 10.25\n\nstep 3 10.25 10.3");
  ASSERT_EQ(b.size(), 3u);
  for (const auto& p : b) ASSERT_TRUE(p.step) << p.error;
  EXPECT_EQ(b[2].step->step, 3);
  EXPECT_DOUBLE_EQ(b[1].step->t_start_s, 10.1);
  EXPECT_DOUBLE_EQ(b[1].step->t_end_s, 10.25);
  // One line, as the helper sends today, is a batch of one.
  auto one = parse_step_batch("step 12 1795977956.134705 1795977956.200264\n");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].step);
}

TEST(StepBatch, ABadLineIsCountedAloneAndAnEmptyDatagramIsMalformed) {
  auto b = parse_step_batch("step 1 1 2\nstep x 1 2\nstep 3 3 4\n");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_TRUE(b[0].step);
  EXPECT_FALSE(b[1].step);
  EXPECT_NE(b[1].error.find("not a non-negative integer"), std::string::npos) << b[1].error;
  EXPECT_TRUE(b[2].step);
  auto empty = parse_step_batch("");
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_FALSE(empty[0].step);
}

TEST(StepBatch, FourHundredStepsInEightDatagramsAreDrainedAtOnce) {
  const test::TempDir tmp("regime-batch");
  const std::string path = (tmp / "steps.sock").string();
  MarkerWorkload work("batch", path, std::nullopt, std::nullopt);
  work.start(0);
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // 400 steps, in 8 datagrams of 50 queued together: within a queue of 10 datagrams, where 400
  // datagrams of one step each would mostly be refused.
  int64_t n = 0;
  int sent = 0;
  for (int d = 0; d < 8; ++d) {
    std::string batch;
    for (int k = 0; k < 50; ++k, ++n) {
      const double t = static_cast<double>(n) * 0.0025;
      batch += format_step_datagram({n, t, t + 0.002}) + "\n";
    }
    ASSERT_EQ(::sendto(fd, batch.data(), batch.size(), 0, reinterpret_cast<sockaddr*>(&addr),
                       sizeof addr),
              static_cast<ssize_t>(batch.size()));
    ++sent;
  }
  ::close(fd);
  std::vector<Step> steps = work.poll_steps();
  ASSERT_EQ(steps.size(), static_cast<size_t>(n));
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, static_cast<int64_t>(i));
    EXPECT_NEAR(steps[i].t_start_s, static_cast<double>(i) * 0.0025, 1e-6);
  }
  EXPECT_EQ(work.malformed_markers(), 0);
  EXPECT_EQ(sent, 8);
}

}  // namespace
}  // namespace regime
