// The phase finder on synthetic traces with known phases, on the real (steady) H200 traces, and
// the job's regime named by the phase holding most of its energy.
#include "analysis/phases.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "analysis/classify.hpp"
#include "analysis/steady_state.hpp"
#include "support/synthetic_trace.hpp"
#include "trace/csv.hpp"

namespace regime {
namespace {

// One level of a synthetic phased trace.
struct Level {
  double seconds = 8;
  double power_W = 400;
  double util_pct = 99;
  uint64_t reasons = 0;
  double step_s = 0.05;
  double sm_MHz = 1980;
};

// Samples every 10 ms cycling through `levels` for `total_s`, power with Gaussian noise, the
// counter read every second, steps back to back at each level's step time.
Trace cycling(const std::vector<Level>& levels, double total_s, double noise_W = 5,
              uint64_t seed = 11) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  double cycle_s = 0;
  for (const Level& l : levels) cycle_s += l.seconds;
  auto level_at = [&](double t) -> const Level& {
    double at = std::fmod(t, cycle_s);
    for (const Level& l : levels) {
      if (at < l.seconds) return l;
      at -= l.seconds;
    }
    return levels.back();
  };
  Trace trace;
  double energy_J = 0;
  const int n = static_cast<int>(total_s / 0.01);
  for (int i = 0; i <= n; ++i) {
    const double t = 0.01 * i;
    const Level& l = level_at(t);
    Sample s;
    s.t_s = t;
    s.power_W = std::max(1.0, l.power_W + noise_W * normal(rng));
    s.power_avg_W = l.power_W;
    if (i > 0) energy_J += *trace.samples.back().power_W * 0.01;
    if (i % 100 == 0 || i == n) s.energy_J = energy_J;
    s.util_pct = l.util_pct;
    s.reasons = l.reasons;
    s.limit_W = 700;
    s.sm_MHz = l.sm_MHz;
    s.temp_C = 50;
    trace.samples.push_back(s);
  }
  int64_t k = 0;
  for (double t = 0; t + level_at(t).step_s <= total_s; ++k) {
    const double d = level_at(t).step_s;
    trace.steps.push_back({k, t, t + d});
    t += d;
  }
  return trace;
}

const Level kGemm{8, 690, 99, reason::kSwPowerCap, 0.033, 1460};
const Level kHost{8, 127, 12, 0, 0.02, 1980};

TEST(Phases, ASteadyTraceIsOnePhase) {
  const Trace t = cycling({Level{}}, 60, 20);
  const PhaseSegmentation seg = find_phases(t, 0, 60);
  EXPECT_EQ(seg.kinds(), 1) << seg.rule;
  EXPECT_EQ(seg.spans.size(), 1u);
  EXPECT_LT(seg.separation, kPhaseSeparation) << seg.rule;
}

TEST(Phases, NoiseDoesNotSplitASteadyTrace) {
  for (double noise_W : {5.0, 40.0, 120.0})
    for (uint64_t seed : {1, 2, 3}) {
      const Trace t = cycling({Level{}}, 120, noise_W, seed);
      EXPECT_EQ(find_phases(t, 0, 120).kinds(), 1) << noise_W << " W, seed " << seed;
    }
}

TEST(Phases, ASlowDriftIsOnePhase) {
  // Power creeping up 15% as a card heats: one level moving, not two.
  std::vector<Level> ramp;
  for (int i = 0; i < 60; ++i) ramp.push_back(Level{1, 400.0 + i, 99, 0, 0.05});
  const Trace t = cycling(ramp, 60, 5);
  EXPECT_EQ(find_phases(t, 0, 60).kinds(), 1);
}

TEST(Phases, TwoLevelsAlternatingAreTwoPhasesWithTheirShares) {
  const Trace t = cycling({kGemm, kHost}, 64);
  const PhaseSegmentation seg = find_phases(t, 0, 64);
  ASSERT_EQ(seg.kinds(), 2) << seg.rule;
  EXPECT_NEAR(seg.level_W[0], 690, 10);
  EXPECT_NEAR(seg.level_W[1], 127, 10);
  EXPECT_EQ(seg.spans.size(), 8u);
  ASSERT_TRUE(seg.cycle_s);
  EXPECT_NEAR(*seg.cycle_s, 16, 0.5);
  EXPECT_EQ(seg.cycles, 4);
  for (const PhaseSpan& s : seg.spans) EXPECT_NEAR(s.t1_s - s.t0_s, 8, 0.51);

  const RegimeReport r = with_phases(t, classify(measure(t), infer_gpu_info(t)), infer_gpu_info(t));
  ASSERT_EQ(r.phases.size(), 2u);
  EXPECT_EQ(r.regime, Regime::CapBound);
  EXPECT_EQ(r.phases[0].regime, Regime::CapBound);
  EXPECT_EQ(r.phases[1].regime, Regime::Underutilized);
  EXPECT_NEAR(r.phases[0].time_fraction, 0.5, 0.02);
  EXPECT_NEAR(r.phases[0].energy_fraction, 690.0 / (690 + 127), 0.02);
  EXPECT_NEAR(r.phases[0].time_fraction + r.phases[1].time_fraction, 1, 1e-9);
  EXPECT_NEAR(r.phases[0].energy_fraction + r.phases[1].energy_fraction, 1, 1e-9);
  EXPECT_NEAR(r.phases[0].measurement.avg_power_W, 690, 10);
  EXPECT_NEAR(r.phases[0].measurement.steps, 4 * 8 / 0.033, 20);
  EXPECT_EQ(r.phases[0].spans_s.size(), 4u);
  EXPECT_EQ(r.advice.find("capping barely matters"), std::string::npos) << r.advice;
  EXPECT_NE(r.advice.find("so a cap matters for this job"), std::string::npos) << r.advice;
  const nlohmann::json j = to_json(r);
  ASSERT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["regime"], "cap-bound");
  EXPECT_EQ(j["phases"][0]["spans"].size(), 4u);
  EXPECT_NEAR(j["phase_cycle_s"].get<double>(), 16, 0.5);
  EXPECT_NE(format_report(r).find("phases (2 kinds, a cycle of 16.0 s"), std::string::npos)
      << format_report(r);
}

TEST(Phases, TheJobIsNamedByEnergyNotByTime) {
  // 4 s busy and 12 s waiting: most of the time underutilized, most of the energy... not.
  Level gemm = kGemm, host = kHost;
  gemm.seconds = 4;
  host.seconds = 12;
  const Trace t = cycling({gemm, host}, 64);
  const RegimeReport r = with_phases(t, classify(measure(t), infer_gpu_info(t)), infer_gpu_info(t));
  ASSERT_EQ(r.phases.size(), 2u) << r.phase_rule;
  // 690 x 4 = 2760 J against 127 x 12 = 1524 J a cycle: the cap-bound phase holds 64%.
  EXPECT_EQ(r.regime, Regime::CapBound);
  EXPECT_NEAR(r.phases[0].energy_fraction, 2760.0 / (2760 + 1524), 0.03);
  EXPECT_NEAR(r.phases[0].time_fraction, 0.25, 0.03);
}

TEST(Phases, ThreeLevelsAreThreePhases) {
  const Trace t = cycling({kGemm, Level{6, 420, 97, 0, 0.05}, kHost}, 66);
  const PhaseSegmentation seg = find_phases(t, 0, 66);
  ASSERT_EQ(seg.kinds(), 3) << seg.rule;
  EXPECT_NEAR(seg.level_W[1], 420, 10);
  ASSERT_TRUE(seg.cycle_s);
  EXPECT_NEAR(*seg.cycle_s, 22, 0.5);
}

TEST(Phases, AShortBlipUnderTheMinimumLengthIsNoPhase) {
  // 1 s at idle power every 20 s: a checkpoint write, not a phase.
  const Trace t = cycling({Level{19, 600, 99, 0, 0.05}, Level{1, 90, 0, 0, 0.5}}, 80);
  const PhaseSegmentation seg = find_phases(t, 0, 80);
  EXPECT_EQ(seg.kinds(), 1) << seg.rule;
  const Measurement m = measure(t);
  const RegimeReport whole = classify(m, infer_gpu_info(t));
  const RegimeReport r = with_phases(t, whole, infer_gpu_info(t));
  EXPECT_TRUE(r.phases.empty());
  EXPECT_EQ(to_json(r), to_json(whole));
  EXPECT_EQ(format_report(r), format_report(whole));
}

TEST(Phases, ALevelUnderTheMinimumShareIsFoldedIn) {
  // One 3 s dip in 100 s: long enough to be a span, too little of the run to be a phase.
  std::vector<Level> levels = {Level{50, 600, 99, 0, 0.05}, Level{3, 150, 10, 0, 0.05},
                               Level{47, 600, 99, 0, 0.05}};
  const Trace t = cycling(levels, 100);
  EXPECT_EQ(find_phases(t, 0, 100).kinds(), 1);
}

TEST(Phases, MeasureSpansSumsEnergyAndSteps) {
  const Trace t = cycling({kGemm, kHost}, 32);
  MeasureOptions whole;
  whole.detect_steady_state = false;
  const Measurement a = measure_window(t, 0, 8, whole);
  const Measurement b = measure_window(t, 16, 24, whole);
  const Measurement both = measure_spans(t, {{0, 8}, {16, 24}});
  EXPECT_EQ(both.steps, a.steps + b.steps);
  EXPECT_NEAR(both.energy_J, a.energy_J + b.energy_J, 1e-6);
  EXPECT_NEAR(both.window_end_s - both.window_start_s,
              (a.window_end_s - a.window_start_s) + (b.window_end_s - b.window_start_s), 1e-9);
  EXPECT_NEAR(both.reason_fraction.at(reason::kSwPowerCap), 1, 0.01);
}

TEST(Phases, SyntheticTracesUnlikeTheSimulatorAndTheH200SitFarFromTheThreshold) {
  // Noisier than any H200 trace, a drift, uneven and short cycles, three levels, a 25% step.
  double max_steady = 0, min_phased = 1e9;
  for (double noise_W : {5.0, 40.0, 120.0}) {
    const Trace t = cycling({Level{}}, 120, noise_W);
    max_steady = std::max(max_steady, find_phases(t, 0, 120).separation);
  }
  std::vector<Level> ramp;
  for (int i = 0; i < 60; ++i) ramp.push_back(Level{1, 400.0 + i, 99, 0, 0.05});
  max_steady = std::max(max_steady, find_phases(cycling(ramp, 60), 0, 60).separation);
  Level gemm4 = kGemm, host12 = kHost, gemm12 = kGemm, host4 = kHost;
  gemm4.seconds = host4.seconds = 4;
  gemm12.seconds = host12.seconds = 12;
  for (const auto& levels :
       {std::vector<Level>{gemm4, host4}, std::vector<Level>{gemm4, host12},
        std::vector<Level>{gemm12, host4},
        std::vector<Level>{kGemm, Level{6, 420, 97, 0, 0.05}, kHost},
        std::vector<Level>{Level{8, 400, 99, 0, 0.05}, Level{8, 300, 99, 0, 0.05}}}) {
    const PhaseSegmentation seg = find_phases(cycling(levels, 96, 20), 0, 96);
    EXPECT_GE(seg.kinds(), 2) << seg.rule;
    min_phased = std::min(min_phased, seg.separation);
  }
  std::cout << "synthetic: steady separation <= " << max_steady << ", phased >= " << min_phased
            << "\n";
  EXPECT_LT(max_steady, kPhaseSeparation);
  EXPECT_GE(min_phased, kPhaseSeparation);
}

TEST(PhaseCycles, WholeCyclesGiveOneFigureWhereverTheyStartAndAWindowEndingMidCycleDoesNot) {
  const Trace t = cycling({kGemm, kHost}, 160);
  // The job's energy per step over whole cycles: (690 W x 8 s + 127 W x 8 s) over the steps of
  // both phases (8 / 0.033 + 8 / 0.02).
  const double whole_J = (690.0 * 8 + 127.0 * 8) / (8 / 0.033 + 8 / 0.02);
  for (double start_s : {16.0, 20.0, 27.5}) {
    const Measurement m = measure_cycles(t, start_s, 16, 5);
    EXPECT_NEAR(m.energy_per_step_J, whole_J, 0.03 * whole_J) << start_s;
    EXPECT_NEAR(m.time_per_step_s, 16 / (8 / 0.033 + 8 / 0.02), 0.002) << start_s;
    EXPECT_LE(m.energy_per_step_ci_J.first, m.energy_per_step_J);
    EXPECT_GE(m.energy_per_step_ci_J.second, m.energy_per_step_J);
  }
  // 12 s windows (three quarters of a cycle) hold another mix wherever they start.
  MeasureOptions as_is;
  as_is.detect_steady_state = false;
  const Measurement busy = measure_window(t, 16, 28, as_is);  // 8 s busy, 4 s waiting: 13.6 J
  const Measurement idle = measure_window(t, 24, 36, as_is);  // 4 s busy, 8 s waiting: 7.2 J
  EXPECT_GT(busy.energy_J / busy.steps, 1.25 * whole_J);
  EXPECT_LT(idle.energy_J / idle.steps, 0.8 * whole_J);
}

TEST(PhaseCycles, TheNextCycleStartsWithTheBusiestPhase) {
  const Trace t = cycling({kGemm, kHost}, 64);
  const PhaseSegmentation seg = find_phases(t, 0, 64);
  ASSERT_TRUE(seg.cycle_s);
  const std::optional<double> next = next_cycle_start(seg, 70);
  ASSERT_TRUE(next);
  EXPECT_NEAR(*next, 80, 0.6);
  PhaseSegmentation steady = find_phases(cycling({Level{}}, 60), 0, 60);
  EXPECT_FALSE(next_cycle_start(steady, 10));
}

TEST(PhaseCycles, CycleDriftComparesTheLastCycleWithTheOneBefore) {
  Trace t = cycling({kGemm, kHost}, 64, 0);
  std::optional<CycleDrift> flat = cycle_drift(t, 64, 16, 0);
  ASSERT_TRUE(flat);
  EXPECT_NEAR(flat->power_rel_per_min, 0, 0.002);
  ASSERT_TRUE(flat->temp_C_per_min);
  EXPECT_NEAR(*flat->temp_C_per_min, 0, 1e-9);
  // 1% more power in the last cycle: 1% per 16 s, 3.75% a minute.
  for (Sample& s : t.samples)
    if (s.t_s >= 48) *s.power_W *= 1.01;
  EXPECT_NEAR(cycle_drift(t, 64, 16, 0)->power_rel_per_min, 0.0375, 0.002);
  EXPECT_FALSE(cycle_drift(Trace{}, 64, 16, 0));
}

// The card's temperature in a job of phases: up 10 C in each busy phase, down again in each
// stall, plus `trend_C_per_cycle` from one cycle to the next.
Trace swinging(double trend_C_per_cycle) {
  Trace t = cycling({kGemm, kHost}, 96, 0);
  for (Sample& s : t.samples) {
    const double at = std::fmod(s.t_s, 16);
    const double swing = at < 8 ? 45 + 10 * at / 8 : 55 - 10 * (at - 8) / 8;
    s.temp_C = swing + trend_C_per_cycle * s.t_s / 16;
  }
  return t;
}

TEST(PhaseCycles, AJobOfPhasesHeatsOnlyWhenItsCyclesGetWarmer) {
  // No trend: the trailing 20 s window reads the swing as a change of over 5 C a minute (ten
  // times the 0.5 a study's probe waits for); cycle against cycle reads nothing.
  const Trace flat = swinging(0);
  const TrailingSlopes trailing = trailing_slopes(flat, 76, 96, 0);
  ASSERT_TRUE(trailing.temp_C);
  EXPECT_GT(std::abs(trailing.temp_C->per_min), 5);
  const std::optional<HeatingRate> h = heating_rate(flat, 0, 96, 20, 0);
  ASSERT_TRUE(h && h->cycle_s);
  EXPECT_NEAR(*h->cycle_s, 16, 0.5);
  EXPECT_NEAR(h->temp_C.per_min, 0, 0.05);
  // 1 C warmer each 16 s cycle: 3.75 C a minute.
  const std::optional<HeatingRate> warming = heating_rate(swinging(1), 0, 96, 20, 0);
  ASSERT_TRUE(warming && warming->cycle_s);
  EXPECT_NEAR(warming->temp_C.per_min, 3.75, 0.1);
  // Too few cycles yet: the trailing window's slope.
  const std::optional<HeatingRate> early = heating_rate(flat, 0, 30, 20, 0);
  ASSERT_TRUE(early);
  EXPECT_FALSE(early->cycle_s);
  // A steady run keeps the trailing fit; no temperatures, no rate.
  synthetic::Spec spec;
  const Trace steady = synthetic::make(spec);
  const std::optional<HeatingRate> s = heating_rate(steady, 0, 20, 20, 0);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->cycle_s);
  EXPECT_NEAR(s->temp_C.per_min, 0, 1e-6);
  Trace bare = flat;
  for (Sample& x : bare.samples) x.temp_C.reset();
  EXPECT_FALSE(heating_rate(bare, 0, 96, 20, 0));
}

TEST(PhasesH200, TheRealSteadyTracesAreOnePhase) {
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR);
  for (const char* name :
       {"h200/gemm_bf16", "h200/resnet50", "h200/resnet18_cifar", "h200_counter/mlp_b16384",
        "h200_counter/resnet18_cifar", "h200_counter/transformer"}) {
    const Trace t = load_trace(dir / (std::string(name) + ".trace.csv"),
                               dir / (std::string(name) + ".steps.csv"));
    const Measurement m = measure(t);
    const PhaseSegmentation seg = find_run_phases(t, m);
    EXPECT_EQ(seg.kinds(), 1) << name << ": " << seg.rule;
    EXPECT_LT(seg.separation, kPhaseSeparation) << name;
  }
}

// A real serving job (tests/data/h100_serve: workloads/serve.py on an H100, read-only): its first
// round ran 36 s at 16-34% utilisation (each new sequence length chose its kernels once) and is
// dropped as warm-up; after it, each 10 s round is a 1.4 s prefill at the limit and 8.6 s of
// decode at about 570 W. The levels split far beyond the threshold, but a prefill burst is
// shorter than a phase may be, so the job is one window and says why; the prefill shows as the
// SW power cap's share of the time.
TEST(PhasesH100, ARealServingJobsPrefillBurstsAreTooShortToBeAPhaseAndSaySo) {
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR) / "h100_serve";
  const Trace t = load_trace(dir / "serve.trace.csv", dir / "serve.steps.csv");
  const Measurement m = measure(t);
  EXPECT_GT(m.window_start_s - t.samples.front().t_s, 36);
  const PhaseSegmentation seg = find_run_phases(t, m);
  EXPECT_EQ(seg.kinds(), 1) << seg.rule;
  EXPECT_GE(seg.separation, kPhaseSeparation) << seg.rule;
  EXPECT_NE(seg.rule.find("no second level lasts 2 s"), std::string::npos) << seg.rule;
  const RegimeReport r = classify(m, infer_gpu_info(t));
  EXPECT_EQ(r.regime, Regime::Headroom);
  EXPECT_EQ(r.evidence["borderline_with"], "cap-bound");
  EXPECT_NEAR(r.evidence["sw_power_cap_time_pct"].get<double>(), 8, 3);
}

}  // namespace
}  // namespace regime
