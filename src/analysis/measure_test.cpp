#include "analysis/measure.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "analysis/series.hpp"
#include "common/error.hpp"
#include "support/synthetic_trace.hpp"
#include "trace/csv.hpp"

namespace regime {
namespace {

Trace h200(const std::string& name) {
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR) / "h200";
  return load_trace(dir / (name + ".trace.csv"), dir / (name + ".steps.csv"));
}

TEST(MeasureH200, Resnet50EnergyPerStepFromTheCounter) {
  const Measurement m = measure(h200("resnet50"));
  EXPECT_EQ(m.energy_source, EnergySource::Counter);
  EXPECT_NEAR(m.energy_per_step_J, 33.95, 0.01 * 33.95);
  EXPECT_LT(m.energy_per_step_ci_J.first, m.energy_per_step_J);
  EXPECT_GT(m.energy_per_step_ci_J.second, m.energy_per_step_J);
  EXPECT_NEAR(m.time_per_step_s, 0.05503, 0.0005);
  EXPECT_LE(m.time_per_step_ci_s.first, m.time_per_step_s);
  EXPECT_GE(m.time_per_step_ci_s.second, m.time_per_step_s);
  EXPECT_GT(m.steps, 300);
  EXPECT_NEAR(m.avg_power_W, 617, 15);
  EXPECT_FALSE(m.per_second);
}

// Regime reads the counter every 5 s (each read costs ~4 ms on an H200). Keeping only reads 5 s
// apart in a real trace must give the same energy per step and a still-tight interval: between
// reads the counter is shaped by power.
TEST(MeasureH200, SparseCounterReadsGiveTheSameEnergyPerStep) {
  for (const char* name : {"resnet50", "gemm_bf16"}) {
    const Trace dense = h200(name);
    Trace sparse = dense;
    // As the run loop reads: at the start, every 5 s, and at the end.
    Sample* last_read = nullptr;
    double last_kept = -1e18;
    for (Sample& s : sparse.samples) {
      if (!s.energy_J) continue;
      last_read = &s;
      if (s.t_s - last_kept < 5.0) {
        s.energy_J.reset();
      } else {
        last_kept = s.t_s;
      }
    }
    for (auto it = dense.samples.rbegin(); it != dense.samples.rend(); ++it)
      if (it->energy_J) {
        last_read->energy_J = it->energy_J;
        break;
      }
    const Measurement a = measure(dense), b = measure(sparse);
    EXPECT_EQ(b.energy_source, EnergySource::Counter) << name;
    EXPECT_NEAR(b.energy_per_step_J, a.energy_per_step_J, 0.005 * a.energy_per_step_J) << name;
    const double half_width = (b.energy_per_step_ci_J.second - b.energy_per_step_ci_J.first) / 2;
    EXPECT_LT(half_width, 0.01 * b.energy_per_step_J) << name;
  }
}

// The counter every 10 ms beside a probe that read it every 5 s (tests/data/h200_counter): each
// new value placed at the middle of the 10 ms it appeared in, linear between.
detail::Cumulative dense_counter(const std::filesystem::path& path) {
  detail::Cumulative F;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  double t_prev = 0, e_prev = -1;
  while (std::getline(in, line)) {
    const auto comma = line.find(',');
    const double t = std::stod(line.substr(0, comma)), e = std::stod(line.substr(comma + 1));
    if (e_prev >= 0 && e != e_prev) {
      F.t_s.push_back(0.5 * (t_prev + t));
      F.F_J.push_back(e);
    }
    t_prev = t, e_prev = e;
  }
  return F;
}

// A probe's counter reads lag the counter's updates by a share of its 100 ms period that stays the
// same all run (59-72 ms in these runs); taken at their reads, a window whose edges see different
// power was off by up to 0.23% (transformer, reads at the ends alone). Placed half a period back,
// the reads every 5 s and at the ends alone both agree with the counter read every 10 ms.
TEST(MeasureH200Counter, SparseReadsAgreeWithTheCounterReadEvery10ms) {
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR) / "h200_counter";
  for (const char* name : {"transformer", "resnet18_cifar", "mlp_b16384"}) {
    const Trace every_5s = load_trace(dir / (std::string(name) + ".trace.csv"),
                                      dir / (std::string(name) + ".steps.csv"));
    ASSERT_FALSE(every_5s.power_points.empty()) << name;
    Trace ends_only = every_5s;
    std::vector<Sample*> reads;
    for (Sample& s : ends_only.samples)
      if (s.energy_J) reads.push_back(&s);
    ASSERT_GE(reads.size(), 3u) << name;
    for (size_t i = 1; i + 1 < reads.size(); ++i) reads[i]->energy_J.reset();

    const detail::Cumulative dense = dense_counter(dir / (std::string(name) + ".dense.csv"));
    for (const Trace* t : {&every_5s, static_cast<const Trace*>(&ends_only)}) {
      const Measurement m = measure(*t);
      ASSERT_EQ(m.energy_source, EnergySource::Counter) << name;
      ASSERT_TRUE(dense.covers(m.window_start_s, m.window_end_s)) << name;
      const double reference_J =
          dense.between(m.window_start_s, m.window_end_s) / static_cast<double>(m.steps);
      EXPECT_NEAR(m.energy_per_step_J / reference_J - 1, 0, 0.0015)
          << name << (t == &ends_only ? ", ends only" : ", every 5 s");
    }
  }
}

TEST(MeasureH200, GemmEnergyPerStepAndCapReason) {
  const Measurement m = measure(h200("gemm_bf16"));
  EXPECT_EQ(m.energy_source, EnergySource::Counter);
  EXPECT_NEAR(m.energy_per_step_J, 22.99, 0.01 * 22.99);
  EXPECT_GT(m.reason_fraction.at(reason::kSwPowerCap), 0.9);
  EXPECT_NEAR(*m.mean_limit_W, 700, 1e-9);
  EXPECT_LT(*m.mean_sm_MHz, 1600);
}

TEST(MeasureH200, OtherSourcesAgreeWithTheCounter) {
  // Dropping the counter falls back to integrated instantaneous power: docs/contracts.md, "H200
  // facts" found them within 0.6% over 20 s windows.
  Trace t = h200("resnet50");
  const double counter_J = measure(t).energy_per_step_J;
  for (Sample& s : t.samples) s.energy_J.reset();
  const Measurement inst = measure(t);
  EXPECT_EQ(inst.energy_source, EnergySource::InstantPower);
  EXPECT_NEAR(inst.energy_per_step_J, counter_J, 0.01 * counter_J);
  for (Sample& s : t.samples) s.power_W.reset();
  const Measurement avg = measure(t);
  EXPECT_EQ(avg.energy_source, EnergySource::AveragedPower);
  EXPECT_NEAR(avg.energy_per_step_J, counter_J, 0.025 * counter_J);
}

TEST(MeasureH200, NoStepsGivesPerSecondFiguresOfTheBusyPart) {
  MeasureOptions o;
  o.use_steps = false;
  const Measurement m = measure(h200("gemm_bf16"), o);
  EXPECT_TRUE(m.per_second);
  EXPECT_EQ(m.steps, 0);
  EXPECT_EQ(m.time_per_step_s, 1);
  // The idle lead-in (about 10 s at 85 W before the GEMMs start) is dropped, and the idle tail:
  // the busy part draws about 690 W.
  EXPECT_NEAR(m.energy_per_step_J, 690, 20);
  EXPECT_NEAR(m.avg_power_W, m.energy_per_step_J, 1e-9);
  EXPECT_NEAR(m.warmup_dropped_s, 10, 1);
  EXPECT_GT(m.window_end_s - m.window_start_s, 25);
}

// A real 40 s --no-steps probe of resnet50 on an H200 (docs/h200.md, section 6): the command spent
// 28 s starting (the GPU at 78 W, then at about 120 W with start-up kernels of up to 409 W for half
// a second) and trained for the last 12 s at about 630 W. The busy stretch is the work.
TEST(MeasureH200, NoStepsProbeOfACommandThatStartedLate) {
  MeasureOptions o;
  o.use_steps = false;
  const Trace t = load_trace(
      std::filesystem::path(REGIME_TEST_DATA_DIR) / "h200" / "resnet50_nosteps.trace.csv", {});
  const Measurement m = measure(t, o);
  EXPECT_NEAR(m.warmup_dropped_s, 28.5, 1.0) << m.steady_state_rule;
  EXPECT_NEAR(m.avg_power_W, 630, 15) << m.steady_state_rule;
  ASSERT_TRUE(m.mean_util_pct.has_value());
  EXPECT_GT(*m.mean_util_pct, 95);
}

TEST(MeasureSynthetic, EachEnergySourceRecoversTheTruth) {
  // 400 W flat, 10 steps per second for 20 s: 40 J per step whichever readings exist.
  for (auto source :
       {EnergySource::Counter, EnergySource::InstantPower, EnergySource::AveragedPower}) {
    synthetic::Spec spec;
    spec.energy_source = source;
    const Trace t = synthetic::make(spec);
    const Measurement m = measure(t);
    EXPECT_EQ(m.energy_source, source) << energy_source_name(source);
    EXPECT_NEAR(m.energy_per_step_J, 40.0, 0.4) << energy_source_name(source);
    EXPECT_NEAR(m.time_per_step_s, 0.1, 1e-6);
  }
}

TEST(MeasureSynthetic, StaleCounterReadsDoNotAddFalseSteps) {
  // Read every 10 ms, updated every 100 ms, noisy power, steps not aligned to the updates: the
  // repeated reads must not be taken as "no energy used" (that widened the H200 intervals 5x).
  synthetic::Spec spec;
  spec.lead_idle_s = 0.037;
  spec.noise_W = 30;
  spec.counter_period_s = 0.01;
  spec.counter_update_s = 0.1;
  spec.step_s = 0.0937;  // block edges drift against the counter updates
  const double truth_J = 400 * 0.0937;
  const Measurement m = measure(synthetic::make(spec));
  EXPECT_EQ(m.energy_source, EnergySource::Counter);
  EXPECT_NEAR(m.energy_per_step_J, truth_J, 0.005 * truth_J);
  EXPECT_LT(m.energy_per_step_ci_J.second - m.energy_per_step_ci_J.first, 0.02 * truth_J);
}

TEST(MeasureSynthetic, DriverPowerBufferIsPreferredOverPolledPower) {
  synthetic::Spec spec;
  spec.energy_source = EnergySource::InstantPower;
  Trace t = synthetic::make(spec);
  // The buffer says 500 W while polling says 400 W: the buffer wins.
  for (int i = 0; i <= 1000; ++i) t.power_points.push_back({0.02 * i, 500});
  const Measurement m = measure(t);
  EXPECT_EQ(m.energy_source, EnergySource::InstantPower);
  EXPECT_NEAR(m.energy_per_step_J, 50.0, 0.5);
  EXPECT_NE(m.energy_detail.find("buffer"), std::string::npos);
}

TEST(MeasureSynthetic, NoEnergyReadingsAtAll) {
  synthetic::Spec spec;
  spec.energy_source = EnergySource::None;
  const Measurement m = measure(synthetic::make(spec));
  EXPECT_EQ(m.energy_source, EnergySource::None);
  EXPECT_EQ(m.energy_per_step_J, 0);
}

TEST(MeasureSynthetic, StepsBeforeTheFirstSampleAreLeftOutNotTheEnergy) {
  // A sampler thread starved of CPU takes its first reading 1.5 s after the work's first step,
  // and its last 0.5 s before the work's last: the steps in between are still measured.
  for (auto source :
       {EnergySource::Counter, EnergySource::InstantPower, EnergySource::AveragedPower}) {
    synthetic::Spec spec;
    spec.energy_source = source;
    Trace t = synthetic::make(spec);
    std::erase_if(t.samples, [](const Sample& s) { return s.t_s < 1.5 || s.t_s > 19.5; });
    const Measurement m = measure(t);
    // The counter, read once a second here, covers less than polled power: power measures.
    EXPECT_NE(m.energy_source, EnergySource::None) << energy_source_name(source);
    EXPECT_NEAR(m.energy_per_step_J, 40.0, 0.4) << energy_source_name(source);
    EXPECT_GE(m.window_start_s, 1.5);
    EXPECT_LE(m.window_end_s, 19.5);
    EXPECT_NE(m.steady_state_rule.find("outside the sampled span"), std::string::npos)
        << m.steady_state_rule;
  }
}

TEST(MeasureSynthetic, WarmupIsDetectedAndDropped) {
  synthetic::Spec spec;
  spec.warmup_s = 3;  // slow, low-power steps first
  const Measurement m = measure(synthetic::make(spec));
  EXPECT_NEAR(m.warmup_dropped_s, 3.0, 0.6);
  EXPECT_NEAR(m.time_per_step_s, 0.1, 1e-6);
  EXPECT_NEAR(m.energy_per_step_J, 40.0, 0.8);
  // Without detection the warm-up pollutes the figures.
  MeasureOptions off;
  off.detect_steady_state = false;
  const Measurement raw = measure(synthetic::make(spec), off);
  EXPECT_EQ(raw.warmup_dropped_s, 0);
  EXPECT_GT(raw.steps, m.steps);
  // A fixed warm-up replaces detection.
  MeasureOptions fixed;
  fixed.warmup_s = 5;
  EXPECT_NEAR(measure(synthetic::make(spec), fixed).warmup_dropped_s, 5.0, 0.11);
}

// A live --no-steps probe: the driver's power buffer starts about 20 ms after the trace (its
// first drain), and the warm-up is still found and dropped.
TEST(MeasureSynthetic, NoStepsWarmupIsFoundWhenThePowerBufferStartsLate) {
  synthetic::Spec spec;
  spec.steps = false;
  spec.warmup_s = 3;  // half the power for 3 s
  spec.energy_source = EnergySource::InstantPower;
  Trace t = synthetic::make(spec);
  const double t0 = t.samples.front().t_s, t1 = t.samples.back().t_s;
  for (double at = t0 + 0.02; at <= t1; at += 0.02) {
    auto it = std::upper_bound(t.samples.begin(), t.samples.end(), at,
                               [](double v, const Sample& s) { return v < s.t_s; });
    t.power_points.push_back({at, *std::prev(it)->power_W});
  }
  MeasureOptions no_steps;
  no_steps.use_steps = false;
  const Measurement m = measure(t, no_steps);
  EXPECT_NEAR(m.warmup_dropped_s, 3.0, 0.6) << m.steady_state_rule;
  EXPECT_NEAR(m.avg_power_W, 400, 4);
}

// A time-limited --no-steps probe of a command that spent most of it starting (on an H200 a cold
// `import torch` and CUDA start-up took over 30 s of a 40 s probe): the second half is quiet, and
// the work is the busy stretch at the end, not a tail to trim.
TEST(MeasureSynthetic, NoStepsFindsTheBusyStretchAfterALongStart) {
  synthetic::Spec spec;
  spec.steps = false;
  spec.lead_idle_s = 34;
  spec.idle_power_W = 140;
  spec.seconds = 6;
  spec.power_W = 450;
  spec.noise_W = 8;
  spec.energy_source = EnergySource::InstantPower;
  MeasureOptions no_steps;
  no_steps.use_steps = false;
  const Measurement m = measure(synthetic::make(spec), no_steps);
  EXPECT_NEAR(m.warmup_dropped_s, 34.0, 0.6) << m.steady_state_rule;
  EXPECT_NEAR(m.avg_power_W, 450, 5) << m.steady_state_rule;
  EXPECT_NE(m.steady_state_rule.find("busy-phase reference"), std::string::npos);
}

// Busy and quiet stretches that alternate are the work itself (a job that waits on its input
// every few seconds): nothing is dropped for being quiet, and the power is their mean.
TEST(MeasureSynthetic, NoStepsKeepsTheDipsOfABurstyJob) {
  synthetic::Spec spec;
  spec.steps = false;
  spec.seconds = 40;
  spec.power_W = 450;
  spec.energy_source = EnergySource::InstantPower;
  Trace t = synthetic::make(spec);
  const double t0 = t.samples.front().t_s;
  for (Sample& s : t.samples)
    if (static_cast<int>((s.t_s - t0) / 2) % 2 == 1) s.power_W = s.power_avg_W = 140.0;
  MeasureOptions no_steps;
  no_steps.use_steps = false;
  const Measurement m = measure(t, no_steps);
  EXPECT_LT(m.warmup_dropped_s, 2.1) << m.steady_state_rule;
  EXPECT_NEAR(m.avg_power_W, 295, 15) << m.steady_state_rule;
}

TEST(MeasureSynthetic, WindowMeasuresOnlyItsPart) {
  synthetic::Spec spec;
  spec.seconds = 40;
  spec.second_half_power_W = 200;  // the last 20 s run at half power
  const Trace t = synthetic::make(spec);
  MeasureOptions o;
  o.detect_steady_state = false;
  const Measurement first = measure_window(t, 0, 20, o);
  const Measurement second = measure_window(t, 20, 40, o);
  EXPECT_NEAR(first.energy_per_step_J, 40, 0.5);
  EXPECT_NEAR(second.energy_per_step_J, 20, 0.5);
  EXPECT_NEAR(second.steps, 200, 2);
  EXPECT_THROW(measure_window(t, 5, 5), Error);
  // A window shorter than a step has no complete step: per-second figures, said so.
  const Measurement tiny = measure_window(t, 10.01, 10.09, o);
  EXPECT_TRUE(tiny.per_second);
  EXPECT_NE(tiny.steady_state_rule.find("no complete step"), std::string::npos);
  EXPECT_NEAR(tiny.energy_per_step_J, 400, 1);
}

TEST(MeasureSynthetic, RefusesImpossibleRequests) {
  const Trace t = synthetic::make({});
  MeasureOptions o;
  o.warmup_s = 1000;
  EXPECT_THROW(measure(t, o), Error);
  o.warmup_s = -1;
  EXPECT_THROW(measure(t, o), Error);
  MeasureOptions g;
  g.gpu = 3;
  EXPECT_THROW(measure(t, g), Error);
  EXPECT_THROW(measure(Trace{}), Error);
}

// A trace built in code has had no reader check its values: a power of 1e308 W overflows the
// integral to a NaN, which is refused rather than measured; zero-length steps leave a time per
// step of 0 that undecidable_figure names.
TEST(MeasureSynthetic, FiguresThatAreNotFiniteOrZeroAreSaid) {
  Trace t = h200("resnet50");
  for (Sample& s : t.samples) {
    s.energy_J.reset();
    if (s.power_W) s.power_W = 1e308;
  }
  try {
    measure(t);
    ADD_FAILURE() << "a NaN energy was measured";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("is not a finite number"), std::string::npos) << e.what();
  }
  Trace zero = h200("resnet50");
  for (Step& s : zero.steps) s.t_end_s = s.t_start_s;
  MeasureOptions keep_all;
  keep_all.detect_steady_state = false;
  const Measurement m = measure(zero, keep_all);
  EXPECT_EQ(m.time_per_step_s, 0);
  EXPECT_EQ(undecidable_figure(m), "the time per step is 0 s, not above 0");
  EXPECT_EQ(undecidable_figure(measure(h200("resnet50"))), "");
}

TEST(MeasureJson, HasTheContractFields) {
  const nlohmann::json j = to_json(measure(synthetic::make({})));
  for (const char* key : {"steps", "time_per_step_s", "time_per_step_ci_s", "energy_per_step_J",
                          "energy_per_step_ci_J", "avg_power_W", "energy_source"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["time_per_step_ci_s"].size(), 2u);
  EXPECT_EQ(j["energy_per_step_ci_J"].size(), 2u);
  EXPECT_EQ(j["energy_source"], "counter");
  EXPECT_EQ(energy_source_name(EnergySource::InstantPower), "instant-power");
}

}  // namespace
}  // namespace regime
