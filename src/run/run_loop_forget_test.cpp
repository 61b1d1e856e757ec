// RunLoop::forget_before: a long run keeps only what follows the last counter reading before the
// cut, so a window from the cut on is still bracketed by the counter and memory stays flat.
#include <gtest/gtest.h>

#include "run/run_loop.hpp"
#include "support/test_gpu.hpp"

namespace regime {
namespace {

using testing::FakeClock;
using testing::TestGpu;
using testing::TestWorkload;

// A 600 W GPU running half-second steps on a simulated clock.
class RunLoopForget : public ::testing::Test {
 protected:
  static RunOptions options(double duration_s, double energy_period_s) {
    RunOptions o;
    o.duration_s = duration_s;
    o.energy_period_s = energy_period_s;
    return o;
  }
  FakeClock clock;
  TestGpu gpu{clock, 600};
  TestWorkload work{clock, 0.5, 0};
};

TEST_F(RunLoopForget, KeepsTheLastCounterReadingBeforeTheCutAndEverythingAfter) {
  RunLoop loop(gpu, work, options(100, 5), clock);
  loop.start();
  loop.run_until([](const Trace&, double now) { return now >= 12.3; });
  const size_t before = loop.trace().samples.size();
  loop.forget_before(12.3);
  const Trace& t = loop.trace();
  ASSERT_FALSE(t.samples.empty());
  // The counter was read at 0, 5, 10: the trace now starts at the 10 s reading.
  EXPECT_NEAR(t.samples.front().t_s, 10, 1e-9);
  EXPECT_TRUE(t.samples.front().energy_J.has_value());
  EXPECT_LT(t.samples.size(), before);
  EXPECT_NEAR(t.samples.back().t_s, 12.3, 0.011);
  for (const Step& s : t.steps) EXPECT_GE(s.t_start_s, 10 - 1e-9);
  for (const PowerPoint& p : t.power_points) EXPECT_GE(p.t_s, 10 - 1e-9);
  EXPECT_DOUBLE_EQ(loop.t_start_s(), 0);  // the run's origin is not forgotten
  // Forgetting again and again keeps the trace short: flat in run length.
  for (double cut = 20; cut <= 90; cut += 10) {
    loop.run_until([&](const Trace&, double now) { return now >= cut; });
    loop.forget_before(cut);
    EXPECT_LE(loop.trace().samples.size(), 1001u) << cut;  // at most 10 s at 10 ms
  }
  loop.run_until(nullptr);
  Trace last = loop.finish();
  EXPECT_NEAR(last.samples.back().t_s, 100, 1e-9);
  EXPECT_TRUE(last.samples.back().energy_J.has_value());
}

TEST_F(RunLoopForget, WithoutACounterReadingBeforeTheCutKeepsEverything) {
  RunLoop loop(gpu, work, options(10, 100), clock);
  loop.start();
  loop.run_until([](const Trace&, double now) { return now >= 3; });
  const size_t n = loop.trace().samples.size();
  loop.forget_before(-1);  // before the first reading: nothing to anchor on
  EXPECT_EQ(loop.trace().samples.size(), n);
}

}  // namespace
}  // namespace regime
