// Each regime appears where the twin puts it: a sim: device runs a sim: workload through
// the real run loop; measure() + classify() on the recorded trace must name the regime that the
// twin's own steady state implies (its reason bits and utilization), thermal case included.
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"
#include "analysis/reasons.hpp"
#include "run/run_loop.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"

namespace regime {
namespace {

using sim::make_sim_workload;
using sim::open_sim_gpu;

struct SimCase {
  std::string device;
  std::string workload;
  double seconds;
};

// Readable in test listings ("GetParam() = sim:t4,seed=3 vgg16 60 s", not a byte dump).
void PrintTo(const SimCase& c, std::ostream* os) {
  *os << c.device << " " << c.workload << " " << c.seconds << " s";
}

// What the twin's analytic steady state says, in the terms of docs/contracts.md, "Regimes".
Regime twin_regime(sim::SimGpu& sim, const std::string& workload) {
  const twin::SteadyState s = twin::steady_state(
      sim.spec(), twin::workload_on(twin::sim_workload_profile(workload), sim.spec()),
      sim.info().enforced_limit_W,
      twin::Environment{sim.options().ambient_C, sim.options().cooling});
  if (s.reasons & kThermalReasons) return Regime::ThermalBound;
  if (s.reasons & reason::kSwPowerCap) return Regime::CapBound;
  if (s.util_pct < kUnderutilizedPct) return Regime::Underutilized;
  return Regime::Headroom;
}

RegimeReport probe_sim(const SimCase& c, Regime& expected) {
  auto gpu = open_sim_gpu(c.device);
  auto& sim = *gpu;
  expected = twin_regime(sim, c.workload);
  WorkloadPtr work = make_sim_workload(c.workload, *gpu);
  RunOptions o;
  o.duration_s = c.seconds;
  const Trace trace = run(*gpu, *work, o, gpu->clock());
  return classify(measure(trace), gpu->info());
}

class SimRegimes : public ::testing::TestWithParam<SimCase> {};

TEST_P(SimRegimes, ClassifyAgreesWithTheTwin) {
  Regime expected = Regime::Idle;
  const RegimeReport r = probe_sim(GetParam(), expected);
  EXPECT_EQ(to_string(r.regime), to_string(expected)) << r.evidence.dump();
  EXPECT_GE(r.confidence, 0.5) << r.evidence.dump();
  EXPECT_EQ(r.measurement.energy_source, EnergySource::Counter);
  EXPECT_GT(r.measurement.steps, 10);
}

INSTANTIATE_TEST_SUITE_P(Twin, SimRegimes,
                         ::testing::Values(SimCase{"sim:h200,seed=3", "gemm", 30},
                                           SimCase{"sim:h200,seed=3", "resnet50", 30},
                                           SimCase{"sim:h200,seed=3", "resnet18_cifar", 30},
                                           SimCase{"sim:h200,ambient_C=30,cooling=2,seed=3",
                                                   "resnet50", 300},
                                           SimCase{"sim:t4,seed=3", "vgg16", 60},
                                           SimCase{"sim:l4,seed=3", "resnet50", 60}),
                         [](const ::testing::TestParamInfo<SimCase>& p) {
                           // e.g. "h200_gemm_30s", "h200_ambient_C30_cooling2_resnet50_300s":
                           // letters, digits, '_'.
                           std::string name =
                               p.param.device.substr(4) + "_" + p.param.workload + "_" +
                               std::to_string(static_cast<int>(p.param.seconds)) + "s";
                           std::string out;
                           for (char ch : name) {
                             if (std::isalnum(static_cast<unsigned char>(ch)))
                               out += ch;
                             else if (!out.empty() && out.back() != '_')
                               out += '_';
                           }
                           return out;
                         });

// The H200 facts of docs/contracts.md, "H200 facts", reproduced on the twin: one card, several
// regimes; and the thermal case the real card never reached.
TEST(SimRegimesH200, OneCardSeveralRegimes) {
  Regime expected = Regime::Idle;
  EXPECT_EQ(probe_sim({"sim:h200,seed=5", "gemm", 30}, expected).regime, Regime::CapBound);
  EXPECT_EQ(probe_sim({"sim:h200,seed=5", "resnet50", 30}, expected).regime, Regime::Headroom);
  EXPECT_EQ(probe_sim({"sim:h200,seed=5", "resnet18_cifar", 30}, expected).regime,
            Regime::Underutilized);
  const RegimeReport hot =
      probe_sim({"sim:h200,ambient_C=30,cooling=2,seed=5", "resnet50", 300}, expected);
  EXPECT_EQ(hot.regime, Regime::ThermalBound) << hot.evidence.dump();
  EXPECT_GT(hot.evidence["thermal_time_pct"].get<double>(), 50);
}

}  // namespace
}  // namespace regime
