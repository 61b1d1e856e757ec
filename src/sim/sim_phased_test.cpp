// sim:phased: a cap-bound matrix phase and a host-bound small-step phase, 8 s each, repeated; and
// a workload of one phase runs exactly as the steady workload does.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::sim {
namespace {

struct Window {
  double power_W = 0, util_pct = 0, cap_share = 0;
};

// Mean of the samples read every 10 ms over [t0, t1) of a run of `seconds`.
std::vector<Sample> run_samples(const std::string& workload, double seconds) {
  auto gpu = open_sim_gpu("sim:h200,seed=3");
  WorkloadPtr work = make_sim_workload(workload, *gpu);
  work->start(0);
  std::vector<Sample> out;
  for (int i = 1; i <= static_cast<int>(seconds * 100); ++i) {
    gpu->clock().sleep_until_s(0.01 * i);
    out.push_back(gpu->read());
  }
  return out;
}

Window window(const std::vector<Sample>& samples, double t0, double t1) {
  Window w;
  int n = 0;
  for (const Sample& s : samples)
    if (s.t_s >= t0 && s.t_s < t1) {
      w.power_W += *s.power_W;
      w.util_pct += *s.util_pct;
      w.cap_share += (*s.reasons & reason::kSwPowerCap) ? 1 : 0;
      ++n;
    }
  w.power_W /= n;
  w.util_pct /= n;
  w.cap_share /= n;
  return w;
}

TEST(SimPhased, AlternatesACapBoundMatrixPhaseWithAHostBoundPhase) {
  const std::vector<Sample> s = run_samples("phased", 40);
  for (double cycle_s : {0.0, 16.0}) {
    const Window gemm = window(s, cycle_s + 2, cycle_s + 8);
    const Window host = window(s, cycle_s + 10, cycle_s + 16);
    EXPECT_NEAR(gemm.power_W, 690, 15) << cycle_s;
    EXPECT_GT(gemm.cap_share, 0.95) << cycle_s;
    EXPECT_GT(gemm.util_pct, 90) << cycle_s;
    EXPECT_NEAR(host.power_W, 127, 15) << cycle_s;
    EXPECT_LT(host.util_pct, 25) << cycle_s;
    EXPECT_EQ(host.cap_share, 0) << cycle_s;
  }
}

TEST(SimPhased, OnePhaseRunsExactlyAsTheSteadyWorkload) {
  auto steady = open_sim_gpu("sim:h200,seed=7");
  auto phased = open_sim_gpu("sim:h200,seed=7");
  const auto work = twin::workload_on(twin::sim_workload_profile("resnet50"), steady->spec());
  steady->start_workload(work, 0);
  phased->start_phased_workload({{work, 8.0}}, 0);
  for (int i = 1; i <= 500; ++i) {
    steady->clock().sleep_until_s(0.01 * i);
    phased->clock().sleep_until_s(0.01 * i);
    ASSERT_EQ(*steady->read().power_W, *phased->read().power_W) << i;
  }
  EXPECT_EQ(steady->steps_done(), phased->steps_done());
  EXPECT_GT(steady->steps_done(), 50);
}

TEST(SimPhased, IsNotASteadyProfile) {
  const auto names = twin::sim_workload_names();
  EXPECT_EQ(std::find(names.begin(), names.end(), "phased"), names.end());
  EXPECT_EQ(twin::phased_workload_names(), (std::vector<std::string>{"phased", "prefill-decode"}));
  try {
    twin::sim_workload_profile("phased");
    FAIL() << "a phased workload has no steady profile";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("changes over time"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace regime::sim
