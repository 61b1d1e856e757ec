// The in-process monitor's window figures: measured from a recorded trace as a probe is (pure),
// and the monitor itself on the fake NVML GPU.
#include "monitor/monitor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/error.hpp"
#include "monitor/monitor_devices.hpp"

namespace regime::monitor {
namespace {

// 500 W for 10 s: the driver's 20 ms points, a polled sample every 0.5 s, and steps of 0.1 s
// from 2 s to 8 s.
Trace steady_500W() {
  Trace t;
  for (int i = 0; i <= 500; ++i) t.power_points.push_back({i * 0.02, 500.0});
  for (int i = 0; i <= 20; ++i) {
    Sample s;
    s.t_s = i * 0.5;
    s.power_W = 500.0;
    t.samples.push_back(s);
  }
  for (int i = 0; i < 60; ++i) t.steps.push_back({i, 2.0 + i * 0.1, 2.0 + (i + 1) * 0.1});
  return t;
}

TEST(MonitorWindow, EnergyTimeAndStepsOfTheWindowFromTheDriverBuffer) {
  const WindowFigures w = window_figures(steady_500W(), "step", 3.0, 5.0);
  EXPECT_EQ(w.name, "step");
  EXPECT_DOUBLE_EQ(w.time_s, 2.0);
  EXPECT_NEAR(w.energy_J, 1000.0, 1e-6);
  EXPECT_NEAR(w.energy_ci_J.first, 1000.0, 1e-6);  // constant power: a zero-width interval
  EXPECT_NEAR(w.energy_ci_J.second, 1000.0, 1e-6);
  EXPECT_EQ(w.energy_detail, "driver power buffer, trapezoid integral");
  EXPECT_EQ(w.steps, 20);
  ASSERT_TRUE(w.energy_per_step_J);
  EXPECT_NEAR(*w.energy_per_step_J, 50.0, 1e-6);
  ASSERT_TRUE(w.time_per_step_s);
  EXPECT_NEAR(*w.time_per_step_s, 0.1, 1e-9);
  EXPECT_EQ(w.power_points, 101);
  const nlohmann::json j = to_json(w);
  EXPECT_DOUBLE_EQ(j.at("energy_J").get<double>(), w.energy_J);
  EXPECT_EQ(j.at("energy_ci_J").size(), 2u);
}

TEST(MonitorWindow, StepsCrossingAnEdgeAreNotCounted) {
  const WindowFigures w = window_figures(steady_500W(), "edge", 3.05, 3.5);
  EXPECT_EQ(w.steps, 4);  // 3.1-3.2 ... 3.4-3.5
  const WindowFigures none = window_figures(steady_500W(), "before", 0.5, 1.5);
  EXPECT_EQ(none.steps, 0);
  EXPECT_FALSE(none.energy_per_step_J);
  EXPECT_NEAR(none.energy_J, 500.0, 1e-6);
}

TEST(MonitorWindow, AWindowWithoutPowerIsAnErrorThatSaysSo) {
  Trace t;
  for (int i = 0; i < 3; ++i) {
    Sample s;
    s.t_s = i;
    t.samples.push_back(s);
  }
  try {
    window_figures(t, "dark", 0.5, 1.5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotSupported);
    EXPECT_NE(std::string(e.what()).find("'dark'"), std::string::npos) << e.what();
  }
}

TEST(MonitorOptions, ABadPeriodIsRefusedBeforeAnyDeviceIsOpened) {
  MonitorOptions o;
  o.device = "nvml:0";
  o.sample_period_s = 0;
  EXPECT_THROW(Monitor{o}, Error);
}

// A simulated GPU sampled on the wall clock, as a script with no GPU monitors one.
TEST(MonitorSim, AWindowOfASecondOrMoreTakesItsEnergyFromTheCounterReadAfterIt) {
  MonitorOptions o;
  o.device = "sim:t4";
  o.sample_period_s = 0.1;
  Monitor m(o);
  EXPECT_EQ(m.gpu().device, "sim:t4");
  m.begin_window("long");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const int64_t id = m.end_window("long");
  const std::optional<WindowFigures> w = m.figures(id, 10);
  ASSERT_TRUE(w);
  // Without the reading after its end the next scheduled one is 5 s away: the buffer's alone.
  EXPECT_EQ(w->energy_source, "counter") << w->energy_detail;
  EXPECT_GT(w->avg_power_W, 20.0);  // busy with the built-in workload, not idle
  EXPECT_LE(w->avg_power_W, m.gpu().current_limit_W * 1.05);
  EXPECT_LE(w->energy_ci_J.first, w->energy_J);
  EXPECT_GE(w->energy_ci_J.second, w->energy_J);
}

TEST(MonitorSim, ACancelledWindowIsGoneAndAnUnknownOneIsRefused) {
  MonitorOptions o;
  o.device = "sim:t4";
  Monitor m(o);
  m.begin_window("dropped");
  m.cancel_window("dropped");
  EXPECT_THROW(m.end_window("dropped"), Error);
  EXPECT_THROW(m.cancel_window("never"), Error);
  m.begin_window("dropped");  // the name is free again
  m.cancel_window("dropped");
}

TEST(MonitorDevices, ACudaIndexMustBeANumber) {
  try {
    open_monitor_device("cuda:first");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cuda:N"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace regime::monitor
