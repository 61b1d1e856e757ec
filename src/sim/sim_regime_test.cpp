// The sim: devices through measure() and classify(): one card, several
// regimes (docs/contracts.md, "H200 facts") and the study's T4/GV100 regimes, from time-stepped
// traces.
#include <gtest/gtest.h>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"

namespace regime::sim {
namespace {

// Records a run the way the run loop does: samples every 100 ms, the energy counter every second,
// steps as they end.
Trace record(const std::string& device, const std::string& workload, double seconds) {
  auto gpu = open_sim_gpu(device);
  WorkloadPtr work = make_sim_workload(workload.substr(std::string("sim:").size()), *gpu);
  Clock* clock = &gpu->clock();
  Trace trace;
  Sample first = gpu->read();
  first.energy_J = gpu->read_energy_J();
  trace.samples.push_back(first);
  work->start(clock->now_s());
  for (int i = 1; i <= static_cast<int>(seconds * 10); ++i) {
    clock->sleep_until_s(0.1 * i);
    Sample s = gpu->read();
    if (i % 10 == 0) s.energy_J = gpu->read_energy_J();
    trace.samples.push_back(s);
    for (const auto& st : work->poll_steps()) trace.steps.push_back(st);
    for (const auto& p : gpu->drain_power_points()) trace.power_points.push_back(p);
  }
  work->stop();
  return trace;
}

RegimeReport classify_run(const std::string& device, const std::string& workload, double seconds,
                          Measurement* m_out = nullptr) {
  Trace trace = record(device, workload, seconds);
  auto gpu = open_sim_gpu(device);
  Measurement m = measure(trace);
  if (m_out) *m_out = m;
  return classify(m, gpu->info());
}

TEST(SimRegime, H200OneCardSeveralRegimes) {
  struct Fact {
    std::string workload;
    Regime regime;
    double power_W;
  };
  for (const Fact& f :
       {Fact{"sim:gemm", Regime::CapBound, 687.5}, Fact{"sim:vgg16", Regime::CapBound, 687.5},
        Fact{"sim:transformer", Regime::CapBound, 687.5},
        Fact{"sim:resnet50", Regime::Headroom, 616},
        Fact{"sim:mobilenet_v2", Regime::Headroom, 524},
        Fact{"sim:resnet18_cifar", Regime::Underutilized, 150}}) {
    Measurement m;
    RegimeReport r = classify_run("sim:h200,seed=5", f.workload, 60, &m);
    SCOPED_TRACE(f.workload);
    EXPECT_EQ(r.regime, f.regime) << to_string(r.regime);
    const double mean_power_W = m.energy_J / (m.window_end_s - m.window_start_s);
    EXPECT_NEAR(mean_power_W, f.power_W, 0.10 * f.power_W);
  }
}

TEST(SimRegime, T4CapBoundGV100Headroom) {
  for (const char* w : {"sim:resnet50", "sim:vgg16", "sim:mobilenet_v2", "sim:densenet121"}) {
    EXPECT_EQ(classify_run("sim:t4,seed=2", w, 120).regime, Regime::CapBound) << w;
    EXPECT_EQ(classify_run("sim:gv100,seed=2", w, 120).regime, Regime::Headroom) << w;
  }
}

TEST(SimRegime, PoorCoolingMakesThermalBound) {
  EXPECT_EQ(classify_run("sim:h200,ambient_C=30,cooling=2,seed=4", "sim:resnet50", 200).regime,
            Regime::ThermalBound);
}

}  // namespace
}  // namespace regime::sim
