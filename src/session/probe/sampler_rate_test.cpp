// Energy per step does not depend on how often the cheap fields are read: the counter (read
// every 5 s and at the ends, as now) carries the energy, and step markers carry their own times.
// So a sampler that wakes once a second gives the figures of the 100 Hz one: checked on the kept
// H200 traces (thinned to what each sampler would have read) and on simulated runs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analysis/measure.hpp"
#include "run/run_loop.hpp"
#include "session/site/target.hpp"
#include "trace/csv.hpp"

namespace regime::session {
namespace {

Trace h200(const std::string& name) {
  const std::string dir = std::string(REGIME_SOURCE_DIR) + "/tests/data/h200/";
  return load_trace(dir + name + ".trace.csv", dir + name + ".steps.csv");
}

// What a sampler reading the cheap fields every `field_s` and the counter every `energy_s` (and
// at both ends) would have recorded of a trace read at 100 Hz with the counter on every row.
Trace as_sampled(const Trace& full, double field_s, double energy_s) {
  Trace out;
  out.steps = full.steps;
  out.power_points = full.power_points;
  const double t0 = full.samples.front().t_s;
  double next_field = t0, next_energy = t0;
  for (size_t i = 0; i < full.samples.size(); ++i) {
    Sample s = full.samples[i];
    const bool last = i + 1 == full.samples.size();
    const bool energy = last || s.t_s >= next_energy - 1e-6;
    if (!energy) s.energy_J.reset();
    if (!(energy || s.t_s >= next_field - 1e-6)) continue;
    if (s.t_s >= next_field - 1e-6)
      next_field += field_s * std::ceil((s.t_s - next_field) / field_s + 1e-9);
    if (energy) next_energy += energy_s * std::ceil((s.t_s - next_energy) / energy_s + 1e-9);
    out.samples.push_back(s);
  }
  return out;
}

TEST(SamplerRate, ThinningAMeasuredTraceKeepsWhatEachSamplerReads) {
  const Trace full = h200("resnet50");
  const Trace t = as_sampled(full, 1.0, 5.0);
  const double span = full.samples.back().t_s - full.samples.front().t_s;
  EXPECT_NEAR(static_cast<double>(t.samples.size()), span + 1, 2);
  int energy = 0;
  for (const Sample& s : t.samples) energy += s.energy_J.has_value();
  EXPECT_NEAR(energy, span / 5 + 2, 1);
  EXPECT_TRUE(t.samples.back().energy_J.has_value());
}

TEST(SamplerRate, EnergyPerStepOfTheKeptH200TracesWithinAFifthOfAPercentAtOneWakeASecond) {
  for (const char* name : {"resnet50", "resnet18_cifar", "gemm_bf16"}) {
    const Trace full = h200(name);
    const Measurement today = measure(as_sampled(full, 0.01, 5.0));
    const Measurement lean = measure(as_sampled(full, 1.0, 5.0));
    ASSERT_GT(today.steps, 0) << name;
    EXPECT_EQ(lean.energy_source, today.energy_source) << name;
    EXPECT_NEAR(lean.energy_per_step_J / today.energy_per_step_J - 1, 0, 0.002)
        << name << ": " << lean.energy_per_step_J << " J vs " << today.energy_per_step_J << " J";
    EXPECT_NEAR(lean.time_per_step_s / today.time_per_step_s - 1, 0, 0.002) << name;
  }
}

Measurement simulated(const std::string& workload, double sample_period_s) {
  Target target = open_target(parse_device_uri("sim:h200"));
  WorkloadSpec spec;
  spec.builtin = workload;
  WorkloadPtr work = target.make_workload(spec);
  RunOptions o;
  o.duration_s = 120;
  o.sample_period_s = sample_period_s;
  const Trace t = run(target.gpu(), *work, o, target.clock());
  return measure(t);
}

TEST(SamplerRate, EnergyPerStepOfSimulatedRunsWithinAFifthOfAPercentAtOneWakeASecond) {
  for (const char* w : {"sim:resnet50", "sim:vgg16", "sim:gemm"}) {
    const Measurement today = simulated(w, 0.01);
    const Measurement lean = simulated(w, 1.0);
    ASSERT_GT(today.steps, 0) << w;
    EXPECT_NEAR(lean.energy_per_step_J / today.energy_per_step_J - 1, 0, 0.002)
        << w << ": " << lean.energy_per_step_J << " J vs " << today.energy_per_step_J << " J";
  }
}

}  // namespace
}  // namespace regime::session
