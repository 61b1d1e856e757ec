#include "sim/sim_gpu.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_workload.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::sim {
namespace {

// A tiny run loop: what src/run/run_loop.cpp does, on the simulated clock.
struct LoopResult {
  double mean_power_W = 0;
  double mean_step_s = 0;
  double mean_sm_MHz = 0;
  uint64_t reasons_or = 0;
  std::vector<Sample> samples;
  std::vector<Step> steps;
};

LoopResult run_loop(SimGpu& gpu, Workload& work, double seconds, double measure_from_s) {
  Clock* clock = &gpu.clock();
  LoopResult r;
  work.start(clock->now_s());
  double e0 = 0, t0 = 0;
  bool edge = false;
  double sm_sum = 0;
  int sm_n = 0;
  for (double t = 0.1; t <= seconds + 1e-9 && !work.finished(); t += 0.1) {
    clock->sleep_until_s(t);
    Sample s = gpu.read();
    r.samples.push_back(s);
    for (const auto& st : work.poll_steps()) r.steps.push_back(st);
    if (!edge && clock->now_s() >= measure_from_s) {
      e0 = *gpu.read_energy_J();
      t0 = clock->now_s();
      edge = true;
    }
    if (edge) {
      sm_sum += *s.sm_MHz;
      ++sm_n;
      r.reasons_or |= *s.reasons;
    }
  }
  r.mean_power_W = (*gpu.read_energy_J() - e0) / (clock->now_s() - t0);
  double sum = 0;
  int n = 0;
  for (const auto& st : r.steps)
    if (st.t_start_s >= t0) {
      sum += st.duration_s();
      ++n;
    }
  r.mean_step_s = n > 0 ? sum / n : 0;
  r.mean_sm_MHz = sm_n > 0 ? sm_sum / sm_n : 0;
  return r;
}

// The time-stepped device and the steady-state solver are one model (within 1%).
void expect_agreement(const std::string& uri, const std::string& workload, double cap_W) {
  auto gpu = open_sim_gpu(uri);
  auto& sim = *gpu;
  if (cap_W > 0) gpu->set_power_limit(cap_W);
  WorkloadPtr work = make_sim_workload(workload, *gpu);
  // Five thermal time constants to settle, then measure.
  const double settle_s = 5 * sim.spec().thermal_time_constant_s * sim.options().cooling;
  LoopResult r = run_loop(*gpu, *work, settle_s + 30, settle_s);
  twin::Environment env{sim.options().ambient_C, sim.options().cooling};
  twin::SteadyState s = twin::steady_state(
      sim.spec(), twin::workload_on(twin::sim_workload_profile(workload), sim.spec()),
      sim.power_limit_W(), env);
  SCOPED_TRACE(uri + " " + workload);
  EXPECT_NEAR(r.mean_power_W, s.avg_power_W, 0.01 * s.avg_power_W);
  EXPECT_NEAR(r.mean_step_s, s.time_s, 0.01 * s.time_s);
  EXPECT_NEAR(r.mean_sm_MHz, s.sm_MHz, 0.01 * s.sm_MHz + 1.0);
  EXPECT_NEAR(sim.true_temp_C(), s.temp_C, 0.01 * s.temp_C + 0.2);
  EXPECT_EQ(r.reasons_or & (reason::kSwPowerCap | reason::kSwThermal),
            s.reasons & (reason::kSwPowerCap | reason::kSwThermal));
}

TEST(SimGpu, SteadyStateAgreesWithSolverCapBound) {
  expect_agreement("sim:t4,noise=0", "resnet50", 0);
  expect_agreement("sim:h200,noise=0", "gemm", 0);
  expect_agreement("sim:v100,noise=0", "vgg16", 150);
}

TEST(SimGpu, SteadyStateAgreesWithSolverHeadroomAndNoise) {
  expect_agreement("sim:h200,seed=7", "resnet50", 0);
  expect_agreement("sim:h200,noise=0", "resnet18_cifar", 0);
  expect_agreement("sim:gv100,noise=0", "mobilenet_v2", 0);
}

TEST(SimGpu, SteadyStateAgreesWithSolverThermalBound) {
  auto gpu = open_sim_gpu("sim:h200,ambient_C=30,cooling=2,noise=0");
  auto& sim = *gpu;
  twin::Environment env{30, 2};
  twin::SteadyState s = twin::steady_state(
      sim.spec(), twin::workload_on(twin::sim_workload_profile("resnet50"), sim.spec()), 700, env);
  ASSERT_TRUE(s.reasons & reason::kSwThermal) << "poor cooling must make it thermal-bound";
  expect_agreement("sim:h200,ambient_C=30,cooling=2,noise=0", "resnet50", 0);
}

TEST(SimGpu, SetPowerLimitValidatesRangeAndGovernorFollowsWithLag) {
  auto gpu = open_sim_gpu("sim:h200,noise=0");
  auto& sim = *gpu;
  try {
    gpu->set_power_limit(150);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
    EXPECT_NE(std::string(e.what()).find("(200-700 W)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpu->set_power_limit(701), Error);
  WorkloadPtr work = make_sim_workload("gemm", *gpu);
  work->start(0);
  gpu->clock().sleep_until_s(20);
  EXPECT_NEAR(sim.true_power_W(), 688, 10);
  EXPECT_DOUBLE_EQ(gpu->set_power_limit(400), 400);
  EXPECT_DOUBLE_EQ(gpu->info().enforced_limit_W, 400);
  gpu->clock().sleep_until_s(20.05);
  EXPECT_GT(sim.true_power_W(), 500) << "the governor needs time to react";
  gpu->clock().sleep_until_s(23);
  EXPECT_LT(sim.true_power_W(), 405);
  EXPECT_GT(sim.true_power_W(), 380);
}

TEST(SimGpu, SensorsRefreshEvery100msAndBufferEvery20ms) {
  auto gpu = open_sim_gpu("sim:h200,seed=3");
  WorkloadPtr work = make_sim_workload("resnet50", *gpu);
  Clock* clock = &gpu->clock();
  ASSERT_TRUE(clock->is_simulated());
  work->start(0);
  clock->sleep_until_s(10.0);
  double p = *gpu->read().power_W;
  clock->sleep_until_s(10.05);
  EXPECT_EQ(*gpu->read().power_W, p) << "instant power holds between 100 ms refreshes";
  clock->sleep_until_s(10.1);
  EXPECT_NE(*gpu->read().power_W, p);
  auto points = gpu->drain_power_points();
  ASSERT_EQ(points.size(), 120u) << "the buffer holds about 2.4 s";
  for (size_t i = 1; i < points.size(); ++i)
    EXPECT_NEAR(points[i].t_s - points[i - 1].t_s, 0.02, 1e-9);
  EXPECT_NEAR(points.back().t_s, 10.1, 1e-9);
  EXPECT_TRUE(gpu->drain_power_points().empty());
  clock->sleep_until_s(10.2);
  EXPECT_EQ(gpu->drain_power_points().size(), 5u);
  Sample s = gpu->read();
  EXPECT_NEAR(s.t_s, 10.2, 1e-9);
  EXPECT_EQ(*s.reasons, 0u) << "resnet50 on an H200 has headroom";
  EXPECT_GT(*s.util_pct, 85);
  EXPECT_DOUBLE_EQ(*s.limit_W, 700);
  EXPECT_FALSE(s.energy_J.has_value());
  EXPECT_GT(*gpu->read_energy_J(), 10 * 400);
}

TEST(SimGpu, IdleThenCapBoundReasonsAndReasonTimes) {
  auto gpu = open_sim_gpu("sim:t4,noise=0");
  Clock* clock = &gpu->clock();
  clock->sleep_until_s(1);
  EXPECT_EQ(*gpu->read().reasons, reason::kIdle);
  EXPECT_EQ(*gpu->read().util_pct, 0);
  WorkloadPtr work = make_sim_workload("vgg16,steps=5", *gpu);
  work->start(clock->now_s());
  EXPECT_FALSE(work->finished());
  EXPECT_FALSE(work->exit_status().has_value());
  clock->sleep_until_s(5);
  EXPECT_EQ(*gpu->read().reasons, reason::kSwPowerCap);
  auto times = gpu->read_reason_times();
  ASSERT_TRUE(times.has_value());
  EXPECT_NEAR(times->seconds_by_reason[reason::kIdle], 1.0, 1e-6);
  EXPECT_GT(times->seconds_by_reason[reason::kSwPowerCap], 3.5);
  clock->sleep_until_s(60);
  EXPECT_TRUE(work->finished());
  EXPECT_EQ(work->exit_status(), 0);
  auto steps = work->poll_steps();
  ASSERT_EQ(steps.size(), 5u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, static_cast<int64_t>(i));
    EXPECT_GT(steps[i].duration_s(), 0);
    if (i > 0) {
      EXPECT_DOUBLE_EQ(steps[i].t_start_s, steps[i - 1].t_end_s);
    }
  }
  EXPECT_EQ(*gpu->read().reasons, reason::kIdle);
}

TEST(SimGpu, UriOptionsAndErrors) {
  EXPECT_THROW(open_sim_gpu("sim:nosuchgpu"), Error);
  try {
    open_sim_gpu("sim:t4,fan=3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ambient_C, cooling, seed, noise"), std::string::npos);
  }
  EXPECT_THROW(open_sim_gpu("sim:t4,cooling=-1"), Error);
  EXPECT_THROW(open_sim_gpu("sim:t4,noise=2"), Error);
  auto gpu = open_sim_gpu("sim:NVIDIA H200,ambient_C=30");
  GpuInfo info = gpu->info();
  EXPECT_EQ(info.name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(info.min_limit_W, 200);
  EXPECT_DOUBLE_EQ(*info.slowdown_temp_C, 89);
  EXPECT_FALSE(gpu->is_physical());
  EXPECT_NEAR(*gpu->read().temp_C, 30, 0.5);
  EXPECT_THROW(make_sim_workload("nosuch", *gpu), Error);
  EXPECT_THROW(make_sim_workload("resnet50,steps=0", *gpu), Error);
  EXPECT_THROW(make_sim_workload("resnet50,epochs=3", *gpu), Error);
}

TEST(SimGpu, ListsModels) {
  Backend b = backend();
  EXPECT_EQ(b.scheme, "sim");
  EXPECT_GE(b.list().models.size(), 10u);
}

}  // namespace
}  // namespace regime::sim
