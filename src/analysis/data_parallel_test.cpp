#include "analysis/data_parallel.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime {
namespace {

Measurement gpu(int index, double power_W, double time_s, double energy_J) {
  Measurement m;
  m.gpu = index;
  m.window_start_s = 10;
  m.window_end_s = 40;
  m.steps = 60;
  m.time_per_step_s = time_s;
  m.time_per_step_ci_s = {time_s * 0.99, time_s * 1.01};
  m.energy_per_step_J = energy_J;
  m.energy_per_step_ci_J = {energy_J - 2, energy_J + 3};
  m.energy_J = energy_J * 60;
  m.avg_power_W = power_W;
  m.p95_power_W = power_W + 10;
  m.window_power_W = {power_W - 5, power_W, power_W + 5};
  m.mean_temp_C = 50 + index;
  m.max_temp_C = 60 + index;
  m.mean_limit_W = 700;
  m.energy_source = EnergySource::Counter;
  m.reason_fraction = {{0x4, 0.1 * (index + 1)}};
  m.samples = 3000;
  return m;
}

TEST(DataParallel, OneGpuIsItsOwnJob) {
  Measurement m = gpu(0, 600, 0.5, 300);
  Measurement j = combine_data_parallel({m});
  EXPECT_DOUBLE_EQ(j.energy_per_step_J, 300);
  EXPECT_DOUBLE_EQ(j.avg_power_W, 600);
  EXPECT_EQ(j.window_power_W, m.window_power_W);
}

TEST(DataParallel, EnergySumsTimeIsSharedPowerStaysPerGpu) {
  Measurement a = gpu(0, 600, 0.5, 300);
  Measurement b = gpu(1, 660, 0.5, 330);
  b.energy_source = EnergySource::InstantPower;
  Measurement j = combine_data_parallel({a, b});
  EXPECT_DOUBLE_EQ(j.energy_per_step_J, 630);
  EXPECT_DOUBLE_EQ(j.energy_per_step_ci_J.first, 626);
  EXPECT_DOUBLE_EQ(j.energy_per_step_ci_J.second, 636);
  EXPECT_DOUBLE_EQ(j.energy_J, 630 * 60);
  EXPECT_DOUBLE_EQ(j.time_per_step_s, 0.5);
  EXPECT_EQ(j.steps, 60);
  EXPECT_DOUBLE_EQ(j.avg_power_W, 630);           // per GPU, the mean
  EXPECT_DOUBLE_EQ(j.p95_power_W, 670);           // the GPU that draws the most
  EXPECT_EQ(j.window_power_W, b.window_power_W);  // a cap binds there first
  EXPECT_EQ(j.gpu, 1);
  EXPECT_DOUBLE_EQ(*j.mean_temp_C, 50.5);
  EXPECT_DOUBLE_EQ(*j.max_temp_C, 61);
  EXPECT_DOUBLE_EQ(j.reason_fraction.at(0x4), 0.2);
  EXPECT_EQ(j.energy_source, EnergySource::InstantPower);
  EXPECT_EQ(j.samples, 6000);
}

TEST(DataParallel, TheSlowerStepTimeIsTheJobs) {
  Measurement a = gpu(0, 600, 0.5, 300);
  Measurement b = gpu(1, 600, 0.52, 300);
  Measurement j = combine_data_parallel({a, b});
  EXPECT_DOUBLE_EQ(j.time_per_step_s, 0.52);
  EXPECT_DOUBLE_EQ(j.time_per_step_ci_s.second, 0.52 * 1.01);
}

TEST(DataParallel, SpreadSaysHowFarTheGpusDiffer) {
  GpuSpread s = gpu_spread({gpu(0, 600, 0.5, 300), gpu(1, 660, 0.5, 330), gpu(2, 630, 0.5, 315)});
  EXPECT_NEAR(s.energy_rel, 30.0 / 315, 1e-12);
  EXPECT_DOUBLE_EQ(s.power_W, 60);
  EXPECT_EQ(s.highest_gpu, 1);
  EXPECT_EQ(to_json(s)["energy_per_step_J"].size(), 3u);
}

TEST(DataParallel, TheMostConstrainedGpuNamesTheJobsRegime) {
  EXPECT_EQ(job_regime({Regime::Headroom, Regime::CapBound}), Regime::CapBound);
  EXPECT_EQ(job_regime({Regime::CapBound, Regime::ThermalBound}), Regime::ThermalBound);
  EXPECT_EQ(job_regime({Regime::Idle, Regime::Underutilized}), Regime::Underutilized);
  EXPECT_EQ(job_regime({Regime::Headroom}), Regime::Headroom);
  EXPECT_THROW(job_regime({}), Error);
}

TEST(DataParallel, NoGpuIsAnError) { EXPECT_THROW(combine_data_parallel({}), Error); }

}  // namespace
}  // namespace regime
