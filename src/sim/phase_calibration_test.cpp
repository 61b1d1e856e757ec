// The phase finder's separation threshold (analysis/phases.hpp, kPhaseSeparation), chosen on
// simulated runs and checked on the real H200 traces: every steady run must stay one phase and
// every phased run split, and the printed separations say how far each set sits from the line
// (docs/analysis.md, "Phases").
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/measure.hpp"
#include "analysis/phases.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_gpu.hpp"
#include "sim/sim_workload.hpp"
#include "trace/csv.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::sim {
namespace {

// A run as the run loop records one: samples every 100 ms, the counter every second, the driver's
// power buffer, steps as they end.
Trace record(const std::string& device, const std::string& workload, double seconds) {
  auto gpu = open_sim_gpu(device);
  WorkloadPtr work = make_sim_workload(workload, *gpu);
  Trace trace;
  Sample first = gpu->read();
  first.energy_J = gpu->read_energy_J();
  trace.samples.push_back(first);
  work->start(0);
  for (int i = 1; i <= static_cast<int>(seconds * 10); ++i) {
    gpu->clock().sleep_until_s(0.1 * i);
    Sample s = gpu->read();
    if (i % 10 == 0) s.energy_J = gpu->read_energy_J();
    trace.samples.push_back(s);
    for (const auto& st : work->poll_steps()) trace.steps.push_back(st);
    for (const auto& p : gpu->drain_power_points()) trace.power_points.push_back(p);
  }
  return trace;
}

struct Seen {
  double max_steady = 0;
  double min_phased = 1e9;
  int right = 0, total = 0;
  void add(const PhaseSegmentation& seg, bool phased, const std::string& what) {
    ++total;
    const bool ok = phased ? seg.kinds() >= 2 : seg.kinds() == 1;
    right += ok ? 1 : 0;
    EXPECT_TRUE(ok) << what << ": " << seg.rule;
    if (phased)
      min_phased = std::min(min_phased, seg.separation);
    else
      max_steady = std::max(max_steady, seg.separation);
  }
  std::string text() const {
    return fmt::format("{} of {} right, steady separation <= {:.1f}{}", right, total, max_steady,
                       min_phased < 1e9 ? fmt::format(", phased >= {:.1f}", min_phased) : "");
  }
};

PhaseSegmentation phases_of(const Trace& t) { return find_run_phases(t, measure(t)); }

TEST(PhaseCalibration, SteadyRunsStayOnePhaseAndPhasedRunsSplit) {
  Seen training;
  for (const char* device : {"sim:h200,seed=2", "sim:l4,seed=2", "sim:a100,seed=2"}) {
    for (const auto& w : twin::sim_workload_names())
      training.add(phases_of(record(device, w, 60)), false, std::string(device) + " " + w);
    training.add(phases_of(record(device, "phased", 64)), true, std::string(device) + " phased");
  }
  Seen check;
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR);
  for (const char* name :
       {"h200/gemm_bf16", "h200/resnet50", "h200/resnet18_cifar", "h200_counter/mlp_b16384",
        "h200_counter/resnet18_cifar", "h200_counter/transformer"})
    check.add(phases_of(load_trace(dir / (std::string(name) + ".trace.csv"),
                                   dir / (std::string(name) + ".steps.csv"))),
              false, name);
  check.add(phases_of(load_trace(dir / "h200/resnet50_nosteps.trace.csv", std::nullopt)), false,
            "h200/resnet50_nosteps");
  std::cout << fmt::format(
      "threshold {:.1f} pooled SDs, gap >= {:.0f}%: training (sim h200 l4 a100, {} steady "
      "workloads + phased) {}; check (real H200 traces) {}\n",
      kPhaseSeparation, 100 * kPhaseMinGapRel, twin::sim_workload_names().size(), training.text(),
      check.text());
  EXPECT_LT(training.max_steady, kPhaseSeparation);
  EXPECT_GE(training.min_phased, kPhaseSeparation);
  EXPECT_LT(check.max_steady, kPhaseSeparation);
}

}  // namespace
}  // namespace regime::sim
