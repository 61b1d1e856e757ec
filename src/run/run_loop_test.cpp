#include "run/run_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "common/error.hpp"
#include "run/wall_clock.hpp"
#include "support/test_gpu.hpp"

namespace regime {
namespace {

using testing::FakeClock;
using testing::TestGpu;
using testing::TestWorkload;

TEST(RunLoop, SamplesEvery10msOnTheSimulatedClockAndReadsEnergyOnceASecond) {
  FakeClock clock;
  TestGpu gpu(clock, 600);
  TestWorkload work(clock, 0.5, 0);
  RunOptions o;
  o.duration_s = 10;
  o.energy_period_s = 1;
  RunStats stats;
  Trace t = run(gpu, work, o, clock, &stats);
  ASSERT_EQ(t.samples.size(), 1001u);  // t = 0, 0.01, ..., 10.00
  EXPECT_DOUBLE_EQ(t.samples.front().t_s, 0);
  EXPECT_NEAR(t.samples.back().t_s, 10, 1e-9);
  for (size_t i = 1; i < t.samples.size(); ++i)
    EXPECT_NEAR(t.samples[i].t_s - t.samples[i - 1].t_s, 0.01, 1e-9) << i;
  int with_energy = 0;
  for (const auto& s : t.samples) with_energy += s.energy_J.has_value();
  EXPECT_EQ(with_energy, 11);  // t = 0, 1, ..., 10
  EXPECT_EQ(gpu.energy_reads, 11);
  ASSERT_TRUE(t.samples.back().energy_J);
  EXPECT_NEAR(*t.samples.back().energy_J - *t.samples.front().energy_J, 6000, 1e-6);
  EXPECT_EQ(t.steps.size(), 20u);
  EXPECT_EQ(t.power_points.size(), 11u);  // one drain a second plus the final one
  EXPECT_TRUE(work.started);
  EXPECT_TRUE(work.stopped);
  EXPECT_EQ(stats.ended_by, RunEnd::Duration);
  EXPECT_EQ(stats.ticks, 1000);
  EXPECT_TRUE(gpu.limit_changes.empty());  // a run never changes a limit by itself
}

TEST(RunLoop, SamplesEveryGpuOfOneJobAtTheSameInstantsWithTheSharedSteps) {
  FakeClock clock;
  TestGpu a(clock, 600);
  TestGpu b(clock, 450);
  TestWorkload work(clock, 0.5, 0);
  RunOptions o;
  o.duration_s = 4;
  o.energy_period_s = 1;
  int sample_calls = 0;
  int step_calls = 0;
  o.on_sample = [&](const Sample&) { ++sample_calls; };
  o.on_step = [&](const Step&) { ++step_calls; };
  RunStats stats;
  std::vector<Trace> t = run({&a, &b}, work, o, clock, &stats);
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(t[0].samples.size(), 401u);
  ASSERT_EQ(t[1].samples.size(), 401u);
  for (size_t i = 0; i < t[0].samples.size(); ++i)
    ASSERT_DOUBLE_EQ(t[0].samples[i].t_s, t[1].samples[i].t_s) << i;
  EXPECT_DOUBLE_EQ(*t[0].samples[7].power_W, 600);
  EXPECT_DOUBLE_EQ(*t[1].samples[7].power_W, 450);
  // Each GPU's own counter: 4 s at its own power.
  EXPECT_NEAR(*t[1].samples.back().energy_J - *t[1].samples.front().energy_J, 1800, 1e-6);
  EXPECT_EQ(t[0].steps.size(), 8u);
  EXPECT_EQ(t[1].steps.size(), 8u);
  EXPECT_EQ(step_calls, 8);
  EXPECT_EQ(sample_calls, 802);
  EXPECT_EQ(a.energy_reads, 5);
  EXPECT_EQ(b.energy_reads, 5);
  EXPECT_EQ(stats.energy_reads, 10);
}

TEST(RunLoop, ACounterReadingIsStampedWhereItWasReadNotAtTheTick) {
  // GPU a's reads take 50 ms on the first tick and on the tick at 1 s (a cold driver, a busy
  // host), so every read after them on those ticks, b's counter among them, comes 50 ms late.
  // Stamped with the tick's instant, a counter reading taken 50 ms later would put 50 ms x power
  // into the wrong segment.
  FakeClock clock;
  TestGpu a(clock, 600);
  TestGpu b(clock, 450);
  bool slow_first = true, slow_at_1s = true;
  a.on_read = [&] {
    if (slow_first) {
      slow_first = false;
      clock.advance_s(0.05);
    } else if (slow_at_1s && clock.now_s() >= 1 - 1e-9) {
      slow_at_1s = false;
      clock.advance_s(0.05);
    }
  };
  TestWorkload work(clock, 0.5, 0);
  RunOptions o;
  o.duration_s = 3;
  o.energy_period_s = 1;
  std::vector<Trace> t = run({&a, &b}, work, o, clock);
  ASSERT_FALSE(slow_at_1s);
  for (size_t k = 0; k < t.size(); ++k) {
    const double power_W = k == 0 ? 600 : 450;
    int readings = 0;
    for (const Sample& s : t[k].samples) {
      if (!s.energy_J) continue;
      ++readings;
      // TestGpu's counter is 1000 J + power x the time it was read.
      EXPECT_NEAR(*s.energy_J, 1000 + power_W * s.t_s, 1e-6) << k << " at " << s.t_s;
    }
    EXPECT_EQ(readings, 4) << k;
    // The counters are read before the work starts: their first readings bracket its first step.
    ASSERT_FALSE(t[k].steps.empty());
    EXPECT_LE(t[k].samples.front().t_s, t[k].steps.front().t_start_s) << k;
  }
  // The samples without a counter reading keep the tick's instant, the same on both GPUs.
  EXPECT_DOUBLE_EQ(t[0].samples[7].t_s, t[1].samples[7].t_s);
}

TEST(RunLoop, RefusesAnEmptyGpuList) {
  FakeClock clock;
  TestWorkload work(clock, 0.5, 0);
  EXPECT_THROW(RunLoop(std::vector<Gpu*>{}, work, RunOptions{}, clock), Error);
}

TEST(RunLoop, KeepsOnlyDriverPowerPointsFromTheRunItself) {
  FakeClock clock;
  clock.advance_s(100);
  TestGpu gpu(clock, 250);
  gpu.buffered_points = {{97.6, 240}, {99.98, 245}, {100.0, 250}};  // the buffer reaches back
  TestWorkload work(clock, 1, 0);
  RunOptions o;
  o.duration_s = 2;
  Trace t = run(gpu, work, o, clock);
  ASSERT_EQ(t.power_points.size(), 4u);  // 100.0 from the buffer, then 101, 102 and the final
  EXPECT_DOUBLE_EQ(t.power_points[0].t_s, 100.0);
  EXPECT_DOUBLE_EQ(t.power_points[1].t_s, 101.0);
}

TEST(RunLoop, EndsWhenTheWorkloadFinishesAndClosesWithAnEnergyReading) {
  FakeClock clock;
  TestGpu gpu(clock, 300);
  TestWorkload work(clock, 0.25, 10);
  RunOptions o;
  o.duration_s = 60;
  RunStats stats;
  Trace t = run(gpu, work, o, clock, &stats);
  EXPECT_EQ(stats.ended_by, RunEnd::WorkloadFinished);
  EXPECT_NEAR(stats.t_end_s, 2.5, 1e-9);
  EXPECT_EQ(t.steps.size(), 10u);
  EXPECT_FALSE(work.stopped);
  ASSERT_TRUE(t.samples.back().energy_J);
  EXPECT_NEAR(t.samples.back().t_s, 2.5, 1e-9);
}

TEST(RunLoop, AStallSkipsMissedTicksInsteadOfDrifting) {
  FakeClock clock;
  TestGpu gpu(clock, 100);
  int reads = 0;
  gpu.on_read = [&] {
    if (++reads == 50) clock.advance_s(0.035);  // one slow read
  };
  TestWorkload work(clock, 1, 0);
  RunOptions o;
  o.duration_s = 1;
  Trace t = run(gpu, work, o, clock);
  // The read at 0.49 s took 35 ms: ticks 0.50, 0.51 and 0.52 are skipped, none bunched up, and
  // the loop is back on the 10 ms grid at 0.53.
  ASSERT_EQ(t.samples.size(), 101u - 3u);
  EXPECT_NEAR(t.samples[49].t_s, 0.49, 1e-9);
  EXPECT_NEAR(t.samples[50].t_s, 0.53, 1e-9);
  for (const auto& s : t.samples) {
    double ticks = s.t_s / 0.01;
    EXPECT_NEAR(ticks, std::round(ticks), 1e-6) << s.t_s;
  }
}

TEST(RunLoop, StreamsSamplesAndStepsAndStopsWhenTheCallerIsDone) {
  FakeClock clock;
  TestGpu gpu(clock, 100);
  TestWorkload work(clock, 0.1, 0);
  RunOptions o;
  o.duration_s = 0;  // until the workload ends or the caller stops
  size_t streamed_samples = 0, streamed_steps = 0;
  o.on_sample = [&](const Sample&) { ++streamed_samples; };
  o.on_step = [&](const Step&) { ++streamed_steps; };
  RunLoop loop(gpu, work, o, clock);
  loop.start();
  EXPECT_EQ(loop.run_until([](const Trace&, double now) { return now >= 3.0; }),
            RunEnd::StopRequested);
  RunStats stats;
  Trace t = loop.finish(&stats);
  EXPECT_EQ(stats.ended_by, RunEnd::StopRequested);
  EXPECT_NEAR(stats.t_end_s, 3.0, 1e-9);
  EXPECT_EQ(streamed_samples, t.samples.size());
  EXPECT_EQ(streamed_steps, t.steps.size());
  EXPECT_EQ(t.steps.size(), 30u);
  EXPECT_TRUE(work.stopped);
}

TEST(RunLoop, ResumesAfterTheCallerChangesTheCapBetweenWindows) {
  FakeClock clock;
  TestGpu gpu(clock, 400);
  TestWorkload work(clock, 0.1, 0);
  RunOptions o;
  o.duration_s = 5;
  RunLoop loop(gpu, work, o, clock);
  loop.start();
  // A window ends when ten steps are in; the caller then sets the next cap and runs on.
  auto ten_more = [&](size_t from) {
    return [from](const Trace& t, double) { return t.steps.size() >= from + 10; };
  };
  ASSERT_EQ(loop.run_until(ten_more(0)), RunEnd::StopRequested);
  EXPECT_NEAR(loop.now_s(), 1.0, 1e-9);
  gpu.set_power_limit(300);
  ASSERT_EQ(loop.run_until(ten_more(10)), RunEnd::StopRequested);
  EXPECT_NEAR(loop.now_s(), 2.0, 1e-9);
  // Past the duration the loop ends by itself and stays ended.
  EXPECT_EQ(loop.run_until(nullptr), RunEnd::Duration);
  EXPECT_EQ(loop.run_until(ten_more(0)), RunEnd::Duration);
  Trace t = loop.finish();
  ASSERT_EQ(t.samples.size(), 501u);  // one continuous trace: 0 .. 5 s every 10 ms
  for (const auto& s : t.samples) EXPECT_EQ(*s.limit_W, s.t_s <= 1.0 + 1e-9 ? 700 : 300) << s.t_s;
  EXPECT_EQ(gpu.limit_changes, (std::vector<double>{300}));
}

TEST(RunLoop, AnAbandonedLoopStopsItsWorkload) {
  FakeClock clock;
  TestGpu gpu(clock, 100);
  TestWorkload work(clock, 0.1, 0);
  {
    RunLoop loop(gpu, work, RunOptions{}, clock);
    loop.start();
    loop.run_until([](const Trace&, double now) { return now >= 1.0; });
  }  // e.g. an exception unwound the caller
  EXPECT_TRUE(work.stopped);
}

TEST(RunLoop, RefusesANonPositiveSamplePeriod) {
  FakeClock clock;
  TestGpu gpu(clock, 100);
  TestWorkload work(clock, 1, 0);
  RunOptions o;
  o.sample_period_s = 0;
  try {
    run(gpu, work, o, clock);
    FAIL() << "accepted a zero sample period";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("sample period"), std::string::npos);
  }
  EXPECT_FALSE(work.started);
}

TEST(RunLoop, OnTheWallClockTicksHoldTheirDeadlinesAndStampUnixTime) {
  WallClock wall;
  TestGpu gpu(wall, 100);
  TestWorkload work(wall, 10, 0);
  RunOptions o;
  o.duration_s = 0.5;
  RunStats stats;
  double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Trace t = run(gpu, work, o, wall, &stats);
  EXPECT_NEAR(t.samples.front().t_s, unix_now, 1.0);
  EXPECT_NEAR(t.samples.back().t_s - t.samples.front().t_s, 0.5, 0.03);
  // With absolute deadlines there is never more than one sample per tick.
  EXPECT_GE(t.samples.size(), 30u);  // loose: a loaded CI machine may skip ticks
  EXPECT_LE(t.samples.size(), 52u);
  for (size_t i = 1; i < t.samples.size(); ++i) EXPECT_GT(t.samples[i].t_s, t.samples[i - 1].t_s);
  EXPECT_GE(stats.wall_s, 0.5);
  EXPECT_GE(stats.cpu_s, 0.0);
}

}  // namespace
}  // namespace regime
