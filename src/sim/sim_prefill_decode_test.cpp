// sim:prefill-decode: LLM serving's compute-bound prefill and memory-bound decode, each a number of
// steps. The phase finder sees two phases, and each phase's best cap (least energy per step within
// +10% time) differs: prefill's near the default, decode's far lower.
#include <gtest/gtest.h>

#include "analysis/phases.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::sim {
namespace {

TEST(SimPrefillDecode, ThePhaseFinderSeesTwoPhasesThatRecur) {
  auto gpu = open_sim_gpu("sim:h200,seed=5");
  WorkloadPtr work = make_sim_workload("prefill-decode", *gpu);
  work->start(0);
  Trace t;
  for (int i = 1; i <= 600; ++i) {  // 60 s, read every 100 ms
    gpu->clock().sleep_until_s(0.1 * i);
    t.samples.push_back(gpu->read());
  }
  t.steps = work->poll_steps();
  const PhaseSegmentation seg = find_phases(t, 0, 60);
  ASSERT_EQ(seg.kinds(), 2) << seg.rule;
  EXPECT_GT(seg.level_W[0], 650);  // prefill at the limit
  EXPECT_LT(seg.level_W[1], 450);  // decode well under it
  ASSERT_TRUE(seg.cycle_s) << seg.rule;
  EXPECT_NEAR(*seg.cycle_s, 12, 1.5);
}

struct AtCap {
  double cap_W = 0, energy_per_step_J = 0, time_per_step_s = 0;
};

// One phase run steady at each cap: 5 s to settle, then 10 s measured.
std::vector<AtCap> sweep_phase(const twin::SimWorkloadProfile& phase) {
  auto gpu = open_sim_gpu("sim:h200,seed=9");
  gpu->start_workload(twin::workload_on(phase, gpu->spec()), 0);
  std::vector<AtCap> out;
  double t = 0;
  for (double cap : {700.0, 600.0, 500.0, 400.0, 300.0, 200.0}) {
    gpu->set_power_limit(cap);
    gpu->clock().sleep_until_s(t += 5);
    const double e0 = *gpu->read_energy_J();
    const int64_t s0 = gpu->steps_done();
    gpu->clock().sleep_until_s(t += 10);
    const double steps = static_cast<double>(gpu->steps_done() - s0);
    out.push_back({cap, (*gpu->read_energy_J() - e0) / steps, 10 / steps});
  }
  return out;
}

double best_cap_W(const std::vector<AtCap>& sweep) {
  const AtCap* best = &sweep.front();
  for (const AtCap& a : sweep)
    if (a.time_per_step_s <= 1.1 * sweep.front().time_per_step_s &&
        a.energy_per_step_J < best->energy_per_step_J)
      best = &a;
  return best->cap_W;
}

TEST(SimPrefillDecode, EachPhaseWantsItsOwnCap) {
  const auto pd = twin::phased_workload_profile("prefill-decode");
  ASSERT_TRUE(pd);
  ASSERT_EQ(pd->phases.size(), 2u);
  const std::vector<AtCap> prefill = sweep_phase(pd->phases[0].profile);
  const std::vector<AtCap> decode = sweep_phase(pd->phases[1].profile);
  // Prefill is cap-bound: every cut costs time at once. Decode barely slows until the cap binds.
  EXPECT_GT(prefill[2].time_per_step_s, 1.1 * prefill[0].time_per_step_s);
  EXPECT_LT(decode[4].time_per_step_s, 1.1 * decode[0].time_per_step_s);
  const double prefill_W = best_cap_W(prefill), decode_W = best_cap_W(decode);
  EXPECT_GE(prefill_W, 500);
  EXPECT_LE(decode_W, 300);
  // The phases last their steps: about 4 s of prefill and 8 s of decode at the default limit.
  EXPECT_NEAR(static_cast<double>(pd->phases[0].steps) * prefill[0].time_per_step_s, 4, 0.8);
  EXPECT_NEAR(static_cast<double>(pd->phases[1].steps) * decode[0].time_per_step_s, 8, 1);
}

}  // namespace
}  // namespace regime::sim
