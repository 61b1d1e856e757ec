#include "twin/spec.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "twin/fit.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::twin {
namespace {

TEST(TwinSpec, LoadsEveryModelByManyNames) {
  auto models = gpu_models();
  for (const char* m :
       {"t4", "gv100", "l4", "v100", "p100", "a40", "rtx6000", "a100", "h100", "h200"})
    EXPECT_NE(std::find(models.begin(), models.end(), m), models.end()) << m;
  EXPECT_EQ(load_gpu_spec("V100").model, "v100");
  EXPECT_EQ(load_gpu_spec("RTX6000").model, "rtx6000");
  EXPECT_EQ(load_gpu_spec("Quadro RTX 6000").model, "rtx6000");
  EXPECT_EQ(load_gpu_spec("NVIDIA H200").model, "h200");
  EXPECT_EQ(load_gpu_spec("Tesla T4").model, "t4");
  GpuSpec h200 = load_gpu_spec("h200");
  EXPECT_DOUBLE_EQ(h200.min_limit_W, 200);
  EXPECT_DOUBLE_EQ(h200.max_limit_W, 700);
  EXPECT_DOUBLE_EQ(h200.slowdown_temp_C, 89);
  EXPECT_DOUBLE_EQ(h200.shutdown_temp_C, 95);
  EXPECT_EQ(h200.sm_count, 132);
}

TEST(TwinSpec, UnknownModelListsKnownOnes) {
  try {
    load_gpu_spec("B300");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
    EXPECT_NE(std::string(e.what()).find("h200"), std::string::npos) << e.what();
  }
}

TEST(TwinSpec, BadFileNamesField) {
  try {
    parse_gpu_spec(R"({"model":"x","name":"X","min_limit_W":"a"})", "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_NE(std::string(e.what()).find("x.json: field \"min_limit_W\""), std::string::npos);
  }
}

TEST(TwinFit, RecoversASimulatedCurveFromTwoPoints) {
  GpuSpec v100 = load_gpu_spec("v100");
  WorkloadParams truth = workload_on(sim_workload_profile("resnet50"), v100);
  std::vector<CapPoint> measured;
  for (double cap : {100.0, 250.0}) {
    SteadyState s = steady_state(v100, truth, cap);
    measured.push_back({cap, s.time_s, s.avg_power_W});
  }
  CurveFit fit = fit_curve(v100, measured);
  EXPECT_LT(fit.rms_rel_residual, 0.01);
  for (double cap : {125.0, 150.0, 200.0}) {
    SteadyState s = steady_state(v100, truth, cap);
    CapPoint p = fit.predict(cap);
    EXPECT_NEAR(p.time_s * p.avg_power_W, s.energy_J, 0.03 * s.energy_J) << cap;
  }
}

TEST(TwinFit, RejectsTooFewOrBadPoints) {
  GpuSpec t4 = load_gpu_spec("t4");
  EXPECT_THROW(fit_curve(t4, {{70, 1, 70}}), Error);
  EXPECT_THROW(fit_curve(t4, {{70, 1, 70}, {70, 1.1, 69}}), Error);
  EXPECT_THROW(fit_curve(t4, {{70, 1, 70}, {64, -1, 64}}), Error);
}

}  // namespace
}  // namespace regime::twin

namespace regime::twin {
namespace {

// The planner fits sim: sweeps too: on every GPU and workload, 3 caps must predict the rest of
// the twin's own curve (noise-free), so any error here is the fitter's.
TEST(TwinFit, RecoversEveryTwinCurveFromThreeCaps) {
  std::vector<double> errors;
  for (const auto& model : gpu_models()) {
    GpuSpec gpu = load_gpu_spec(model);
    for (const auto& name : sim_workload_names()) {
      WorkloadParams truth = workload_on(sim_workload_profile(name), gpu);
      std::vector<double> caps;
      for (int i = 0; i < 7; ++i)
        caps.push_back(gpu.min_limit_W + (gpu.max_limit_W - gpu.min_limit_W) * i / 6.0);
      std::vector<CapPoint> fit_points;
      for (double cap : {caps[0], caps[3], caps[6]}) {
        SteadyState s = steady_state(gpu, truth, cap);
        fit_points.push_back({cap, s.time_s, s.avg_power_W});
      }
      CurveFit fit = fit_curve(gpu, fit_points);
      double worst = 0;
      for (double cap : caps) {
        SteadyState s = steady_state(gpu, truth, cap);
        CapPoint p = fit.predict(cap);
        worst = std::max(worst, std::abs(p.time_s * p.avg_power_W / s.energy_J - 1));
      }
      errors.push_back(worst);
      // A cap set can miss a kink (two of the three caps above the draw): a few % then.
      EXPECT_LT(worst, 0.10) << model << " " << name;
    }
  }
  std::sort(errors.begin(), errors.end());
  std::printf(
      "twin self-fit, worst-cap energy error over %zu curves: median %.2f %%, max %.2f %%\n",
      errors.size(), 100 * errors[errors.size() / 2], 100 * errors.back());
  EXPECT_LT(errors[errors.size() / 2], 0.025) << "median worst-cap energy error";
}

}  // namespace
}  // namespace regime::twin
