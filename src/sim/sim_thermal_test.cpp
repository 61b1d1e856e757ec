// Heat stops where the silicon stops: on every simulated GPU, however poor its cooling, no
// temperature goes above the shutdown threshold. Past the slowdown temperature the hardware
// slowdown holds the die there; where even that cannot, the GPU shuts down and the run ends with
// a clear error. The time-stepped device and the steady-state solver agree on which happens.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::sim {
namespace {

struct HotRun {
  double max_temp_C = 0;
  bool shut_down = false;
  std::string error;
  uint64_t reasons_or = 0;
};

HotRun run_hot(const std::string& device, const std::string& workload, double seconds) {
  auto gpu = open_sim_gpu(device);
  auto& sim = *gpu;
  WorkloadPtr work = make_sim_workload(workload, *gpu);
  Clock* clock = &gpu->clock();
  HotRun r;
  work->start(clock->now_s());
  for (double t = 0.1; t <= seconds; t += 0.1) {
    clock->sleep_until_s(t);
    r.max_temp_C = std::max(r.max_temp_C, sim.true_temp_C());
    try {
      r.reasons_or |= gpu->read().reasons.value_or(0);
      work->poll_steps();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::GpuLost);
      r.shut_down = true;
      r.error = e.what();
      break;
    }
  }
  return r;
}

TEST(SimThermal, NoGpuGetsHotterThanItsShutdownTemperature) {
  int shutdowns = 0, held = 0, cases = 0;
  for (const auto& model : twin::gpu_models()) {
    const twin::GpuSpec spec = twin::load_gpu_spec(model);
    for (double cooling : {2.0, 3.0, 5.0, 10.0}) {
      const std::string device =
          fmt::format("sim:{},ambient_C=45,cooling={},noise=0", model, cooling);
      SCOPED_TRACE(device);
      const twin::Environment env{45, cooling};
      const twin::SteadyState s =
          twin::steady_state(spec, twin::workload_on(twin::sim_workload_profile("vgg16"), spec),
                             spec.default_limit_W, env);
      EXPECT_LE(s.temp_C, spec.shutdown_temp_C);
      // Long enough to settle: eight thermal time constants.
      const HotRun r = run_hot(device, "vgg16", 8 * spec.thermal_time_constant_s * cooling);
      ++cases;
      EXPECT_LE(r.max_temp_C, spec.shutdown_temp_C + 1e-9);
      EXPECT_EQ(r.shut_down, s.shutdown) << "solver and device disagree, steady " << s.temp_C
                                         << " C, device max " << r.max_temp_C << " C";
      if (r.shut_down) {
        ++shutdowns;
        EXPECT_NE(r.error.find("shut down"), std::string::npos) << r.error;
        EXPECT_NE(r.error.find(fmt::format("shutdown temperature {} C", spec.shutdown_temp_C)),
                  std::string::npos)
            << r.error;
      } else if (s.reasons & reason::kHwThermal) {
        ++held;
        EXPECT_TRUE(r.reasons_or & reason::kHwThermal);
        // Held at the slowdown temperature, or above it at the slowdown clock.
        EXPECT_GE(s.temp_C, spec.slowdown_temp_C - 1e-6);
        EXPECT_NEAR(r.max_temp_C, s.temp_C, 0.5);
      }
    }
  }
  std::printf("%d hot runs: %d held by the hardware slowdown, %d shut down\n", cases, held,
              shutdowns);
  EXPECT_GT(shutdowns, 0) << "the sweep of coolings must reach the shutdown case";
  EXPECT_GT(held, 0) << "the sweep of coolings must reach the hardware slowdown case";
}

TEST(SimThermal, AShutDownGpuAnswersNothing) {
  auto gpu = open_sim_gpu("sim:t4,ambient_C=45,cooling=10,noise=0");
  WorkloadPtr work = make_sim_workload("vgg16", *gpu);
  work->start(0);
  gpu->clock().sleep_until_s(3000);
  EXPECT_TRUE(gpu->shut_down());
  EXPECT_THROW(gpu->read(), Error);
  EXPECT_THROW(gpu->read_energy_J(), Error);
  EXPECT_THROW(gpu->set_power_limit(65), Error);
  EXPECT_FALSE(work->finished()) << "the work did not finish: the GPU is gone";
  EXPECT_EQ(gpu->info().name, "Tesla T4") << "its identity is still known, for messages";
}

// The steady state of every model, cap and cooling the sweeps and `sim curve` can ask for.
TEST(SimThermal, SteadyStatesNeverExceedTheShutdownTemperature) {
  for (const auto& model : twin::gpu_models()) {
    const twin::GpuSpec spec = twin::load_gpu_spec(model);
    for (const auto& name : twin::sim_workload_names()) {
      const auto w = twin::workload_on(twin::sim_workload_profile(name), spec);
      for (double cooling : {1.0, 2.0, 5.0, 20.0})
        for (double ambient : {25.0, 45.0})
          for (double cap : {spec.min_limit_W, spec.default_limit_W, spec.max_limit_W}) {
            const twin::SteadyState s = twin::steady_state(spec, w, cap, {ambient, cooling});
            EXPECT_LE(s.temp_C, spec.shutdown_temp_C) << model << " " << name << " " << cap;
            if (s.temp_C > spec.slowdown_temp_C + 1e-6) {
              EXPECT_TRUE(s.sm_MHz <= spec.min_sm_MHz + 1e-6 || s.shutdown)
                  << "above the slowdown temperature only at the slowdown clock";
            }
          }
    }
  }
}

}  // namespace
}  // namespace regime::sim
