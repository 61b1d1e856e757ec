// A long control run measured in segments as it goes (SegmentedMeasurement): the folded figures
// against the whole trace measured at once, on the kept H200 traces, and the folding rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "session/control/control.hpp"
#include "trace/csv.hpp"

namespace regime::session {
namespace {

Trace h200(const std::string& name) {
  const std::string dir = std::string(REGIME_SOURCE_DIR) + "/tests/data/h200/";
  return load_trace(dir + name + ".trace.csv", dir + name + ".steps.csv");
}

// The same trace measured whole, and in segments of `segment_s` with detection only in the
// first, as a long `regime control` does.
TEST(ControlSegments, EnergyPerStepOfTheKeptH200TracesMovesLessThanATenthOfAPercent) {
  for (const char* name : {"resnet50", "resnet18_cifar", "gemm_bf16"}) {
    const Trace t = h200(name);
    ASSERT_FALSE(t.steps.empty()) << name;
    MeasureOptions first;
    first.detect_steady_state = false;
    const Measurement whole = measure(t, first);
    const double t0 = t.samples.front().t_s, t1 = t.samples.back().t_s;
    SegmentedMeasurement seg;
    const double segment_s = 8;
    double from = t0;
    for (double cut = t0 + segment_s; cut + segment_s / 2 < t1; cut += segment_s) {
      seg.add(measure_window(t, from, cut, first));
      from = cut;
    }
    seg.add(measure_window(t, from, t1, first));
    ASSERT_GE(seg.segments(), 3) << name;
    const Measurement m = seg.result();
    EXPECT_NEAR(m.energy_per_step_J / whole.energy_per_step_J - 1, 0, 0.001) << name;
    EXPECT_NEAR(m.time_per_step_s / whole.time_per_step_s - 1, 0, 0.01) << name;
    EXPECT_NEAR(m.avg_power_W / whole.avg_power_W - 1, 0, 0.002) << name;
    // Only the steps cut by a segment edge are lost.
    EXPECT_LE(whole.steps - m.steps, seg.segments()) << name;
    EXPECT_GE(whole.steps, m.steps) << name;
    EXPECT_LT(m.energy_per_step_ci_J.first, m.energy_per_step_J) << name;
    EXPECT_GT(m.energy_per_step_ci_J.second, m.energy_per_step_J) << name;
    EXPECT_EQ(m.max_temp_C, whole.max_temp_C) << name;
    EXPECT_NEAR(*m.mean_temp_C, *whole.mean_temp_C, 0.5) << name;
  }
}

Measurement segment(double t0, double t1, int steps, double energy_J, double ci_half_J) {
  Measurement m;
  m.window_start_s = t0;
  m.window_end_s = t1;
  m.steps = steps;
  m.energy_J = energy_J;
  m.energy_per_step_J = energy_J / steps;
  m.energy_per_step_ci_J = {m.energy_per_step_J - ci_half_J, m.energy_per_step_J + ci_half_J};
  m.time_per_step_s = (t1 - t0) / steps;
  m.time_per_step_ci_s = {m.time_per_step_s, m.time_per_step_s};
  m.max_temp_C = 60 + t0;
  m.mean_temp_C = 50 + t0;
  m.reason_fraction[reason::kSwPowerCap] = t0 < 10 ? 1.0 : 0.0;
  m.reasons_known = true;
  m.steady_state_rule = "rule";
  return m;
}

TEST(ControlSegments, FoldsEnergyByStepsAndIntervalsAsIndependentSegments) {
  SegmentedMeasurement seg;
  EXPECT_THROW(seg.result(), Error);
  seg.add(segment(0, 10, 100, 1000, 0.3));   // 10 J a step
  seg.add(segment(10, 40, 300, 6000, 0.4));  // 20 J a step
  const Measurement m = seg.result();
  EXPECT_EQ(m.steps, 400);
  EXPECT_DOUBLE_EQ(m.energy_J, 7000);
  EXPECT_DOUBLE_EQ(m.energy_per_step_J, 17.5);
  const double half = std::hypot(100 * 0.3, 300 * 0.4) / 400;
  EXPECT_NEAR(m.energy_per_step_ci_J.first, 17.5 - half, 1e-12);
  EXPECT_NEAR(m.energy_per_step_ci_J.second, 17.5 + half, 1e-12);
  EXPECT_DOUBLE_EQ(m.time_per_step_s, 0.1);
  EXPECT_DOUBLE_EQ(m.avg_power_W, 175);
  EXPECT_DOUBLE_EQ(m.window_start_s, 0);
  EXPECT_DOUBLE_EQ(m.window_end_s, 40);
  EXPECT_DOUBLE_EQ(*m.max_temp_C, 70);
  EXPECT_DOUBLE_EQ(*m.mean_temp_C, (50 * 10 + 60 * 30) / 40.0);
  EXPECT_DOUBLE_EQ(m.reason_fraction.at(reason::kSwPowerCap), 0.25);
  EXPECT_NE(m.steady_state_rule.find("1 more segment"), std::string::npos) << m.steady_state_rule;
}

TEST(ControlSegments, PowerWindowsStayBoundedAndKeepTheirQuantiles) {
  SegmentedMeasurement seg;
  for (int k = 0; k < 200; ++k) {
    Measurement m = segment(k * 100.0, k * 100.0 + 100, 1000, 1e4, 0.1);
    for (int i = 0; i < 200; ++i) m.window_power_W.push_back(100 + i);  // uniform 100..299 W
    seg.add(m);
  }
  const Measurement m = seg.result();
  ASSERT_LE(m.window_power_W.size(), SegmentedMeasurement::kMaxPowerWindows);
  EXPECT_GE(m.window_power_W.size(), SegmentedMeasurement::kMaxPowerWindows / 2);
  EXPECT_TRUE(std::is_sorted(m.window_power_W.begin(), m.window_power_W.end()));
  const double median = m.window_power_W[m.window_power_W.size() / 2];
  EXPECT_NEAR(median, 200, 3);
  EXPECT_NEAR(m.window_power_W.front(), 100, 1);
  EXPECT_NEAR(m.window_power_W.back(), 299, 3);
}

}  // namespace
}  // namespace regime::session
