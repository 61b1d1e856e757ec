// The study's T4/L4/GV100 findings (docs/paper.md) and the H200 facts of docs/contracts.md, "H200
// facts", from the steady-state twin. Regimes are told apart with simple thresholds here (the
// classifier is in src/analysis). Each GPU's figures are calibrated to what is asserted about it
// (its spec file's "calibration" says which constants were chosen for it): they show the twin can
// hold these findings with physically plausible constants, not that it predicts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

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

// The T4's unmeasured constants (voltage floor, dynamic/memory split) were chosen inside their
// physical bounds to come nearest the study's T4 table: these figures are calibrated to the
// study, not predicted. What those bounds allow: a 60 W penalty for the CNNs the cap holds, growing
// with their clock-bound share, and a 64 W cap that costs energy too (the study found it about
// equal: docs/twin.md).
TEST(TwinStudy, T4CalibratedToTheStudy) {
  GpuSpec t4 = load_gpu_spec("t4");
  double largest_rise = -1;
  for (const auto& w : kCnns) {
    SteadyState s70 = at("t4", w, 70), s64 = at("t4", w, 64), s60 = at("t4", w, 60);
    SCOPED_TRACE(w);
    const double rise64 = s64.energy_J / s70.energy_J - 1, rise60 = s60.energy_J / s70.energy_J - 1;
    std::printf("T4 %-15s %5.1f W %4.0f MHz  E(64)/E(70) %+5.1f %%  E(60)/E(70) %+5.1f %%\n",
                w.c_str(), s70.avg_power_W, s70.sm_MHz, 100 * rise64, 100 * rise60);
    if (w == "resnet18_cifar") {
      // Input-bound: it waits on its host most of a step and never reaches 70 W.
      EXPECT_EQ(classify(s70, t4), Regime::Headroom);
      EXPECT_LT(s70.avg_power_W, 60);
      continue;
    }
    EXPECT_EQ(classify(s70, t4), Regime::CapBound);
    const auto [lo_MHz, hi_MHz] = t4.bounds.at("loaded_sm_MHz");
    EXPECT_GE(s70.sm_MHz, lo_MHz);
    EXPECT_LE(s70.sm_MHz, hi_MHz);
    EXPECT_GT(rise60, 0.0) << "60 W costs energy";
    EXPECT_GT(rise60, rise64) << "and more than 64 W";
    EXPECT_GT(s60.time_s, s64.time_s);
    largest_rise = std::max(largest_rise, rise60);
  }
  EXPECT_GE(largest_rise, 0.08) << "the study: up to +11.7 %";
  EXPECT_LE(largest_rise, 0.15);
}

// The L4's dynamic power was raised inside its bounds for the study's L4 finding (calibrated).
TEST(TwinStudy, L4CalibratedLowerCapsSaveEnergy) {
  for (const auto& w : kCnns) {
    SteadyState s72 = at("l4", w, 72), s64 = at("l4", w, 64), s60 = at("l4", w, 60);
    SCOPED_TRACE(w);
    std::printf("L4 %-15s %5.1f W %4.0f MHz  E(64)/E(72) %+5.1f %%  E(60)/E(72) %+5.1f %%\n",
                w.c_str(), s72.avg_power_W, s72.sm_MHz, 100 * (s64.energy_J / s72.energy_J - 1),
                100 * (s60.energy_J / s72.energy_J - 1));
    if (w == "resnet18_cifar") {
      // Input-bound at 45 W: no cap from 60 W up binds, so none changes anything.
      EXPECT_NEAR(s60.energy_J, s72.energy_J, 1e-6 * s72.energy_J);
      continue;
    }
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
    std::printf("GV100 %-15s %5.1f W %4.0f MHz %4.1f C\n", w.c_str(), s.avg_power_W, s.sm_MHz,
                s.temp_C);
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

namespace regime::twin {
namespace {

struct Percentiles {
  double p10 = 0, p50 = 0, p90 = 0;
};
Percentiles percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at_q = [&](double q) {
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  return {at_q(0.1), at_q(0.5), at_q(0.9)};
}

// A spec with every twin constant drawn uniformly inside its bounds (the static power split
// between base and leakage at random), or nullopt when the draw leaves the loaded-clock bounds.
std::optional<GpuSpec> draw_plausible(const GpuSpec& nominal, std::mt19937_64& rng) {
  auto draw = [&](const char* key) {
    const auto [lo, hi] = nominal.bounds.at(key);
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  GpuSpec g = nominal;
  g.voltage_floor_MHz = draw("voltage_floor_MHz");
  g.voltage_floor_ratio = draw("voltage_floor_ratio");
  const double static_W = draw("static_power_W");
  g.leakage_power_W = std::uniform_real_distribution<double>(0.1, 0.6)(rng) * static_W;
  g.base_power_W = static_W - g.leakage_power_W;
  g.leakage_per_C = draw("leakage_per_C");
  g.dynamic_power_W = draw("dynamic_power_W");
  g.memory_power_W = draw("memory_power_W");
  g.thermal_resistance_C_per_W = draw("thermal_resistance_C_per_W");
  const auto [lo_MHz, hi_MHz] = g.bounds.at("loaded_sm_MHz");
  const double loaded_MHz =
      steady_state(g, workload_on(sim_workload_profile("vgg16"), g), g.default_limit_W).sm_MHz;
  if (loaded_MHz < lo_MHz || loaded_MHz > hi_MHz) return std::nullopt;
  return g;
}

// The study's question asked with every constant of a card drawn inside its bounds: how the two
// lower caps change energy per step against the default, per CNN the default limit holds.
struct PlausibleAnswer {
  int sets = 0;
  std::map<std::string, std::vector<double>> rise_mid, rise_low;  // per workload
  int study_table =
      0;  // sets where the T4 table holds whole (64 W within 3 %, 60 W dearer, >= 8 %)
};

PlausibleAnswer ask_plausible(const std::string& model, double mid_W, double low_W,
                              const std::vector<std::string>& workloads, int draws) {
  const GpuSpec nominal = load_gpu_spec(model);
  std::mt19937_64 rng(11);
  PlausibleAnswer a;
  for (int i = 0; i < draws; ++i) {
    const auto g = draw_plausible(nominal, rng);
    if (!g) continue;
    ++a.sets;
    bool flat_mid = true, dearer_low = true;
    double largest = -1;
    for (const auto& w : workloads) {
      const auto p = workload_on(sim_workload_profile(w), *g);
      const double e0 = steady_state(*g, p, g->default_limit_W).energy_J;
      const double r_mid = steady_state(*g, p, mid_W).energy_J / e0 - 1;
      const double r_low = steady_state(*g, p, low_W).energy_J / e0 - 1;
      a.rise_mid[w].push_back(r_mid);
      a.rise_low[w].push_back(r_low);
      flat_mid = flat_mid && std::abs(r_mid) <= 0.03;
      dearer_low = dearer_low && r_low > 0;
      largest = std::max(largest, r_low);
    }
    if (flat_mid && dearer_low && largest >= 0.08) ++a.study_table;
  }
  return a;
}

void print_answer(const std::string& model, double mid_W, double low_W, double dflt_W,
                  const PlausibleAnswer& a) {
  std::printf("%s, %d constant sets drawn inside the bounds with the loaded clock in range:\n",
              model.c_str(), a.sets);
  for (const auto& [w, mids] : a.rise_mid) {
    const auto& lows = a.rise_low.at(w);
    const auto m = percentiles(mids), l = percentiles(lows);
    const auto dearer = std::count_if(lows.begin(), lows.end(), [](double r) { return r > 0; });
    std::printf(
        "  %-13s E(%.0f)/E(%.0f) %+5.1f %% [%+5.1f, %+5.1f]  E(%.0f)/E(%.0f) %+5.1f %% [%+5.1f, "
        "%+5.1f]  %.0f W dearer in %3.0f %%\n",
        w.c_str(), mid_W, dflt_W, 100 * m.p50, 100 * m.p10, 100 * m.p90, low_W, dflt_W, 100 * l.p50,
        100 * l.p10, 100 * l.p90, low_W, 100.0 * static_cast<double>(dearer) / a.sets);
  }
}

const std::vector<std::string> kCapped = {"resnet50", "vgg16", "mobilenet_v2", "densenet121"};

// The T4 (median [10th, 90th percentile] over the draws); docs/twin.md reports these.
TEST(TwinStudy, T4AnswerOverThePlausibleConstants) {
  const PlausibleAnswer a = ask_plausible("t4", 64, 60, kCapped, 400);
  print_answer("t4", 64, 60, 70, a);
  std::printf("  the study's whole T4 table: %d of %d sets\n", a.study_table, a.sets);
  ASSERT_GE(a.sets, 100);
  // What the twin predicts with plausible constants: VGG-16, the most clock-bound, pays at 60 W
  // in most of them.
  const auto& v = a.rise_low.at("vgg16");
  EXPECT_GT(std::count_if(v.begin(), v.end(), [](double r) { return r > 0; }), a.sets / 2);
}

// The L4: do 64 and 60 W save energy with any plausible constants, or only with the calibrated?
TEST(TwinStudy, L4AnswerOverThePlausibleConstants) {
  const PlausibleAnswer a = ask_plausible("l4", 64, 60, kCapped, 400);
  print_answer("l4", 64, 60, 72, a);
  ASSERT_GE(a.sets, 100);
}

// The GV100: how often do the CNNs keep headroom at 250 W, and how far apart are their powers?
TEST(TwinStudy, GV100AnswerOverThePlausibleConstants) {
  const GpuSpec nominal = load_gpu_spec("gv100");
  std::mt19937_64 rng(11);
  int sets = 0, all_headroom = 0;
  std::vector<double> spreads;
  for (int i = 0; i < 400; ++i) {
    const auto g = draw_plausible(nominal, rng);
    if (!g) continue;
    ++sets;
    double lo = 1e9, hi = 0;
    bool headroom = true;
    for (const auto& w : kCnns) {
      const SteadyState s = steady_state(*g, workload_on(sim_workload_profile(w), *g), 250);
      headroom = headroom && !(s.reasons & reason::kSwPowerCap);
      lo = std::min(lo, s.avg_power_W);
      hi = std::max(hi, s.avg_power_W);
    }
    if (headroom) ++all_headroom;
    spreads.push_back(hi / lo);
  }
  const auto p = percentiles(spreads);
  std::printf(
      "gv100, %d constant sets: all five CNNs with headroom at 250 W in %.0f %%; highest / "
      "lowest power %.2f [%.2f, %.2f]\n",
      sets, 100.0 * all_headroom / sets, p.p50, p.p10, p.p90);
  ASSERT_GE(sets, 100);
  EXPECT_GT(p.p10, 1.25) << "power varies by workload with any plausible constants";
}

// The mechanisms a missing penalty could come from, each varied alone on the spec's T4: the
// clocks' discrete 15 MHz steps (the governor picks the highest step under the cap), and leakage
// rising slowly or fast with temperature. Printed for docs/twin.md.
TEST(TwinStudy, T4MechanismsOneAtATime) {
  const GpuSpec t4 = load_gpu_spec("t4");
  const auto vgg = workload_on(sim_workload_profile("vgg16"), t4);
  auto stepped = [&](const GpuSpec& g, double cap_W) {
    // The highest 15 MHz step at or under the continuous governor's clock.
    const SteadyState s = steady_state(g, vgg, cap_W);
    const double f = 15.0 * std::floor(s.sm_MHz / 15.0);
    const double temp_C = steady_temp_C(g, vgg, f, nominal_environment(g));
    const Operating op = operating_point(g, vgg, f, temp_C);
    return op.avg_W * op.time_s;
  };
  auto rises = [&](const GpuSpec& g, bool steps) {
    auto e = [&](double cap) {
      return steps ? stepped(g, cap) : steady_state(g, vgg, cap).energy_J;
    };
    return std::pair{e(64) / e(70) - 1, e(60) / e(70) - 1};
  };
  const auto base = rises(t4, false), steps = rises(t4, true);
  GpuSpec cold = t4, hot = t4;
  cold.leakage_per_C = t4.bounds.at("leakage_per_C").first;
  hot.leakage_per_C = t4.bounds.at("leakage_per_C").second;
  const auto slow_leak = rises(cold, false), fast_leak = rises(hot, false);
  std::printf(
      "T4 vgg16 E(64)/E(70), E(60)/E(70): spec %+.1f %%, %+.1f %%; 15 MHz steps %+.1f %%, "
      "%+.1f %%; leakage %.3f/C %+.1f %%, %+.1f %%; leakage %.3f/C %+.1f %%, %+.1f %%\n",
      100 * base.first, 100 * base.second, 100 * steps.first, 100 * steps.second,
      cold.leakage_per_C, 100 * slow_leak.first, 100 * slow_leak.second, hot.leakage_per_C,
      100 * fast_leak.first, 100 * fast_leak.second);
  // None of them turns the 64 W rise into "about equal" while keeping the 60 W penalty.
  for (const auto& r : {steps, slow_leak, fast_leak}) {
    EXPECT_NEAR(r.first, base.first, 0.02);
    EXPECT_NEAR(r.second, base.second, 0.02);
  }
}

}  // namespace
}  // namespace regime::twin
