#include "run/run_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "common/error.hpp"
#include "run/test_gpu.hpp"
#include "run/wall_clock.hpp"

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
  Trace t = run(gpu, work, o, &stats);  // uses the GPU's simulated clock
  ASSERT_EQ(t.samples.size(), 1001u);   // t = 0, 0.01, ..., 10.00
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

TEST(RunLoop, ScheduledActionsRunAtTheirTimeRightAfterAnEnergyReading) {
  FakeClock clock;
  TestGpu gpu(clock, 500);
  TestWorkload work(clock, 1, 0);
  RunOptions o;
  o.duration_s = 6;
  o.sample_period_s = 0.1;
  o.energy_period_s = 100;  // only edges read energy here
  std::vector<double> action_times;
  o.actions.push_back({4.0, [&](Gpu& g, double now) {
                         action_times.push_back(now);
                         g.set_power_limit(400);
                       }});
  o.actions.push_back({2.0, [&](Gpu& g, double now) {
                         action_times.push_back(now);
                         g.set_power_limit(500);
                       }});
  o.window_edges_s = {1.234};
  Trace t = run(gpu, work, o, clock);
  ASSERT_EQ(action_times.size(), 2u);
  EXPECT_NEAR(action_times[0], 2.0, 1e-9);  // sorted by time, not by insertion
  EXPECT_NEAR(action_times[1], 4.0, 1e-9);
  EXPECT_EQ(gpu.limit_changes, (std::vector<double>{500, 400}));
  std::vector<double> energy_times;
  for (const auto& s : t.samples)
    if (s.energy_J) energy_times.push_back(s.t_s);
  ASSERT_EQ(energy_times.size(), 5u);  // start, 1.234, 2, 4, end
  EXPECT_NEAR(energy_times[1], 1.234, 1e-9);
  EXPECT_NEAR(energy_times[2], 2.0, 1e-9);
  EXPECT_NEAR(energy_times[3], 4.0, 1e-9);
  EXPECT_NEAR(energy_times[4], 6.0, 1e-9);
  // The sample at the edge shows the old cap; the next tick shows the new one.
  for (const auto& s : t.samples) {
    double expected_W = s.t_s < 2.0 + 1e-9 ? 700 : s.t_s < 4.0 + 1e-9 ? 500 : 400;
    EXPECT_EQ(*s.limit_W, expected_W) << s.t_s;
  }
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

TEST(RunLoop, StreamsSamplesAndStepsAndStopsOnRequest) {
  FakeClock clock;
  TestGpu gpu(clock, 100);
  TestWorkload work(clock, 0.1, 0);
  RunOptions o;
  o.duration_s = 0;  // until the workload ends or a stop
  size_t streamed_samples = 0, streamed_steps = 0;
  o.on_sample = [&](const Sample&) { ++streamed_samples; };
  o.on_step = [&](const Step&) { ++streamed_steps; };
  o.stop_requested = [&] { return clock.now_s() >= 3.0; };
  RunStats stats;
  Trace t = run(gpu, work, o, clock, &stats);
  EXPECT_EQ(stats.ended_by, RunEnd::StopRequested);
  EXPECT_NEAR(stats.t_end_s, 3.0, 1e-9);
  EXPECT_EQ(streamed_samples, t.samples.size());
  EXPECT_EQ(streamed_steps, t.steps.size());
  EXPECT_EQ(t.steps.size(), 30u);
  EXPECT_TRUE(work.stopped);
}

TEST(RunLoop, ATickHookCanMarkAnEdgeDecidedWhileRunningAndStop) {
  FakeClock clock;
  TestGpu gpu(clock, 400);
  TestWorkload work(clock, 0.1, 0);
  RunOptions o;
  o.duration_s = 10;
  o.energy_period_s = 100;  // only the start, the hook's edges and the end read energy
  int edges = 0;
  o.on_tick = [&](double now) {
    if (now >= 1.234 && edges == 0) {  // e.g. a window just converged: set the next cap
      gpu.set_power_limit(300);
      ++edges;
      return RunOptions::TickAction::Edge;
    }
    return now >= 2.5 ? RunOptions::TickAction::Stop : RunOptions::TickAction::Continue;
  };
  RunStats stats;
  Trace t = run(gpu, work, o, clock, &stats);
  EXPECT_EQ(stats.ended_by, RunEnd::StopRequested);
  EXPECT_NEAR(stats.t_end_s, 2.5, 1e-9);
  std::vector<const Sample*> with_energy;
  for (const auto& s : t.samples)
    if (s.energy_J) with_energy.push_back(&s);
  ASSERT_EQ(with_energy.size(), 3u);             // start, the edge, the end
  EXPECT_NEAR(with_energy[1]->t_s, 1.24, 1e-9);  // the first tick at or after 1.234 s
  EXPECT_EQ(with_energy[1]->limit_W, 300);       // taken after the hook changed the cap
  // It is an extra sample at the tick's instant; the 10 ms grid goes on after it.
  EXPECT_EQ(t.samples.size(), 251u + 1u + 1u);  // 0..2.50 every 10 ms, the edge, the final read
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

TEST(RunLoop, ClockForPrefersTheDevicesSimulatedClock) {
  FakeClock sim;
  WallClock wall;
  TestGpu simulated(sim, 100, true);
  TestGpu real(wall, 100, false);
  EXPECT_EQ(&clock_for(simulated, wall), &sim);
  EXPECT_EQ(&clock_for(real, wall), &wall);
}

TEST(RunLoop, OnTheWallClockTicksHoldTheirDeadlinesAndStampUnixTime) {
  WallClock wall;
  TestGpu gpu(wall, 100, false);
  TestWorkload work(wall, 10, 0);
  RunOptions o;
  o.duration_s = 0.5;
  RunStats stats;
  double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Trace t = run(gpu, work, o, &stats);
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
