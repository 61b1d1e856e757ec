#include "twin/spec.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "twin/fit.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::twin {
namespace {

// A T4-like spec file's required fields, without the closing brace.
const std::string kT4LikeFields = R"({"model":"x","name":"X","min_limit_W":60,"max_limit_W":70,
    "default_limit_W":70,"max_sm_MHz":1590,"min_sm_MHz":300,"idle_sm_MHz":300,"max_mem_MHz":5001,
    "sm_count":40,"mem_bandwidth_GBps":320,"peak_tflops":65,"voltage_floor_MHz":1350,
    "voltage_floor_ratio":0.8,"idle_power_W":9,"base_power_W":18,"leakage_power_W":8,
    "leakage_per_C":0.008,"dynamic_power_W":260,"memory_power_W":20,
    "thermal_resistance_C_per_W":0.6,"thermal_time_constant_s":40,"slowdown_temp_C":93,
    "shutdown_temp_C":96,"gpu_max_temp_C":85)";

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

// Every spec file: each number has a source, each twin constant has bounds inside the physical
// envelope, and the constants (and the twin's loaded clock) lie inside their bounds.
TEST(TwinSpec, EveryConstantHasASourceAndLiesInItsBounds) {
  const auto models = gpu_models();
  ASSERT_GE(models.size(), 10u);
  for (const auto& model : models) {
    SCOPED_TRACE(model);
    GpuSpec gpu = load_gpu_spec(model);
    for (const auto& [field, value] : numeric_fields(gpu))
      EXPECT_TRUE(gpu.sources.count(field)) << field << " = " << value << " has no source";
    const auto envelope = physical_envelope(gpu);
    for (const auto& name : twin_constant_names()) {
      EXPECT_TRUE(gpu.sources.count(name)) << name << " has no source";
      auto b = gpu.bounds.find(name);
      ASSERT_NE(b, gpu.bounds.end()) << name << " has no bounds";
      const auto [lo, hi] = b->second;
      const auto [env_lo, env_hi] = envelope.at(name);
      EXPECT_GE(lo, env_lo - 1e-9)
          << name << " bounds [" << lo << ", " << hi << "] leave the envelope";
      EXPECT_LE(hi, env_hi + 1e-9)
          << name << " bounds [" << lo << ", " << hi << "] leave the envelope";
    }
    EXPECT_TRUE(bound_violations(gpu).empty()) << bound_violations(gpu).front();
    // The clock at the default limit of a CNN that fills every SM.
    const double loaded_MHz =
        steady_state(gpu, workload_on(sim_workload_profile("vgg16"), gpu), gpu.default_limit_W)
            .sm_MHz;
    const auto [lo, hi] = gpu.bounds.at("loaded_sm_MHz");
    EXPECT_GE(loaded_MHz, lo) << "vgg16 at the default limit";
    EXPECT_LE(loaded_MHz, hi) << "vgg16 at the default limit";
    for (double cap : gpu.calibrated_caps_W) {
      EXPECT_GE(cap, gpu.min_limit_W);
      EXPECT_LE(cap, gpu.max_limit_W);
    }
  }
}

TEST(TwinSpec, AConstantOutsideItsBoundsIsRefusedNamingIt) {
  const std::string text = kT4LikeFields + R"(,"bounds":{"dynamic_power_W":[40,175]}})";
  try {
    parse_gpu_spec(text, "x.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_NE(std::string(e.what()).find("x.json: constant outside its bounds: dynamic_power_W: "
                                         "260 outside [40, 175]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_gpu_spec(text.substr(0, text.size() - 2) + R"(,"x":[3,1]}})", "x.json"), Error)
      << "lo > hi";
}

// fp32 and TF32 from the data sheets: TF32 only from Ampere on, fp32 under the 16-bit rate.
TEST(TwinSpec, ReadsTheFp32AndTf32RatesAndRefusesANegativeOne) {
  const GpuSpec a100 = load_gpu_spec("a100");
  EXPECT_DOUBLE_EQ(a100.fp32_tflops, 19.5);
  ASSERT_TRUE(a100.tf32_tflops);
  EXPECT_DOUBLE_EQ(*a100.tf32_tflops, 156);
  EXPECT_DOUBLE_EQ(load_gpu_spec("h100").fp32_tflops, 67);
  for (const char* m : {"v100", "gv100", "t4", "rtx6000", "p100"})
    EXPECT_FALSE(load_gpu_spec(m).tf32_tflops) << m;
  for (const char* m : {"a100", "a40", "l4", "h100", "h200"})
    EXPECT_TRUE(load_gpu_spec(m).tf32_tflops) << m;
  for (const auto& m : gpu_models()) {
    const GpuSpec s = load_gpu_spec(m);
    EXPECT_GT(s.fp32_tflops, 0) << m;
    EXPECT_LT(s.fp32_tflops, s.peak_tflops) << m;
  }

  const std::string& head = kT4LikeFields;
  const GpuSpec bare = parse_gpu_spec(head + "}", "x.json");
  EXPECT_DOUBLE_EQ(bare.fp32_tflops, 0);
  EXPECT_FALSE(bare.tf32_tflops);
  const GpuSpec full = parse_gpu_spec(head + R"(,"fp32_tflops":8.1,"tf32_tflops":null})", "x.json");
  EXPECT_DOUBLE_EQ(full.fp32_tflops, 8.1);
  EXPECT_FALSE(full.tf32_tflops);
  for (const char* bad : {R"(,"fp32_tflops":-8.1})", R"(,"tf32_tflops":-1})",
                          R"(,"fp32_tflops":80})", R"(,"tf32_tflops":"fast"})"}) {
    try {
      parse_gpu_spec(head + bad, "x.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Parse) << bad;
      EXPECT_NE(std::string(e.what()).find("x.json: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("_tflops"), std::string::npos) << e.what();
    }
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
