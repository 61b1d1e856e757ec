// The study's T4/L4/GV100 findings and the H200 facts
// of DESIGN.md section 5, from the steady-state twin. Regimes are told apart with simple
// thresholds here (the classifier itself is in src/analysis/).
#include <gtest/gtest.h>

#include <algorithm>

#include "trace/trace.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::twin {
namespace {

const std::vector<std::string> kCnns = {"resnet50", "vgg16", "mobilenet_v2", "densenet121",
                                        "resnet18_cifar"};

SteadyState at(const std::string& gpu, const std::string& workload, double cap_W) {
  GpuSpec spec = load_gpu_spec(gpu);
  return steady_state(spec, workload_on(sim_workload_profile(workload), spec), cap_W);
}

enum class Regime { CapBound, ThermalBound, Headroom, Underutilized };

Regime classify(const SteadyState& s, const GpuSpec& gpu) {
  if (s.util_pct < 50) return Regime::Underutilized;
  if (s.reasons & (reason::kSwThermal | reason::kHwThermal)) return Regime::ThermalBound;
  if ((s.reasons & reason::kSwPowerCap) || s.busy_power_W > 0.97 * s.cap_W) return Regime::CapBound;
  return s.sm_MHz >= gpu.max_sm_MHz - 1 ? Regime::Headroom : Regime::CapBound;
}

TEST(TwinStudy, T4CapBoundAndDeepCapCostsEnergy) {
  GpuSpec t4 = load_gpu_spec("t4");
  double largest_rise = -1;
  for (const auto& w : kCnns) {
    SteadyState s70 = at("t4", w, 70), s64 = at("t4", w, 64), s60 = at("t4", w, 60);
    SCOPED_TRACE(w);
    EXPECT_EQ(classify(s70, t4), Regime::CapBound);
    const double rise64 = s64.energy_J / s70.energy_J - 1, rise60 = s60.energy_J / s70.energy_J - 1;
    std::printf("T4 %-15s E(64)/E(70) %+5.1f %%  E(60)/E(70) %+5.1f %%\n", w.c_str(), 100 * rise64,
                100 * rise60);
    EXPECT_LE(std::abs(rise64), 0.03);
    EXPECT_GT(rise60, 0.0);
    EXPECT_GT(s60.time_s, s64.time_s);
    largest_rise = std::max(largest_rise, rise60);
  }
  EXPECT_GE(largest_rise, 0.08);
  EXPECT_LE(largest_rise, 0.15);
}

TEST(TwinStudy, L4LowerCapsSaveEnergy) {
  for (const auto& w : kCnns) {
    SteadyState s72 = at("l4", w, 72), s64 = at("l4", w, 64), s60 = at("l4", w, 60);
    SCOPED_TRACE(w);
    EXPECT_LT(s64.energy_J, s72.energy_J);
    EXPECT_LT(s60.energy_J, s72.energy_J);
    EXPECT_GE(s60.time_s, s72.time_s) << "slower, yet cheaper";
  }
}

TEST(TwinStudy, GV100HeadroomAndPowerVariesByWorkload) {
  GpuSpec gv100 = load_gpu_spec("gv100");
  double lo = 1e9, hi = 0;
  for (const auto& w : kCnns) {
    SteadyState s = at("gv100", w, gv100.default_limit_W);
    SCOPED_TRACE(w);
    EXPECT_EQ(s.reasons & reason::kSwPowerCap, 0u);
    EXPECT_LT(s.avg_power_W, 0.95 * gv100.default_limit_W);
    EXPECT_LT(s.temp_C, gv100.slowdown_temp_C) << "smooth heating, no throttling";
    lo = std::min(lo, s.avg_power_W);
    hi = std::max(hi, s.avg_power_W);
  }
  EXPECT_GE(hi / lo, 1.25) << "lowest " << lo << " W, highest " << hi << " W";
}

TEST(TwinStudy, H200RegimesAndPowerMatchDesignFacts) {
  GpuSpec h200 = load_gpu_spec("h200");
  struct Fact {
    std::string workload;
    Regime regime;
    double power_W;
  };
  const std::vector<Fact> facts = {
      {"gemm", Regime::CapBound, 687.5},        {"vgg16", Regime::CapBound, 687.5},
      {"transformer", Regime::CapBound, 687.5}, {"resnet50", Regime::Headroom, 616},
      {"mobilenet_v2", Regime::Headroom, 524},  {"resnet18_cifar", Regime::Underutilized, 150}};
  for (const auto& f : facts) {
    SteadyState s = at("h200", f.workload, 700);
    SCOPED_TRACE(f.workload);
    std::printf("H200 %-15s %6.1f W (measured %5.1f)  %4.0f MHz  %4.1f C  util %4.1f %%\n",
                f.workload.c_str(), s.avg_power_W, f.power_W, s.sm_MHz, s.temp_C, s.util_pct);
    EXPECT_EQ(classify(s, h200), f.regime);
    EXPECT_NEAR(s.avg_power_W, f.power_W, 0.10 * f.power_W);
    EXPECT_LE(s.temp_C, 70) << "temperatures stayed at or under 66 C";
    if (f.regime == Regime::CapBound) {
      EXPECT_TRUE(s.reasons & reason::kSwPowerCap);
      EXPECT_GE(s.sm_MHz, 1460);
      EXPECT_LE(s.sm_MHz, 1960);
    }
    if (f.regime == Regime::Headroom) {
      EXPECT_DOUBLE_EQ(s.sm_MHz, h200.max_sm_MHz);
    }
  }
  EXPECT_NEAR(at("h200", "resnet18_cifar", 700).util_pct, 21, 5);
}

}  // namespace
}  // namespace regime::twin
