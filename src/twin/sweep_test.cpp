#include "twin/sweep.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "twin/baseline.hpp"

namespace regime::twin {
namespace {

std::string zeus(const std::string& gpu) {
  return std::string(REGIME_TEST_DATA_DIR) + "/zeus/" + gpu + ".sweep.csv";
}

// Real sweeps: 3 fitted caps, held-out caps predicted.
void expect_zeus_fit(const std::string& gpu) {
  SweepFitReport r = fit_sweep(read_sweep_table(zeus(gpu)).rows, std::nullopt, 3);
  ASSERT_TRUE(r.median_mape_energy_pct.has_value());
  std::printf("%s: %zu workloads, median mape_energy %.2f %%, median regret %.2f %%\n", gpu.c_str(),
              r.workloads.size(), *r.median_mape_energy_pct, *r.median_best_cap_regret_pct);
  EXPECT_LE(*r.median_mape_energy_pct, 3.0);
  EXPECT_LE(*r.median_best_cap_regret_pct, 1.0);
  for (const auto& w : r.workloads)
    EXPECT_EQ(w.fit_caps.size(), std::min<size_t>(3, w.measured.size())) << w.workload;
}

TEST(TwinSweepFit, ZeusV100MedianEnergyErrorWithin3Percent) { expect_zeus_fit("V100"); }
TEST(TwinSweepFit, ZeusRTX6000MedianEnergyErrorWithin3Percent) { expect_zeus_fit("RTX6000"); }

// The twin fits what the shared parser (trace/sweep_table.hpp) reads, optional columns included.
TEST(TwinSweepFit, FitsTheTableTheSharedParserReads) {
  // Four caps of a real Zeus V100 sweep, with optional columns the planner writes.
  SweepTable t = parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit,energy_J,time_ci_s\n"
      "adam,V100,100,11.0867,91.004,epoch,1008.93,0.05\n"
      "adam,V100,150,8.23,130.285,epoch,1072.25,0.05\n"
      "adam,V100,200,7.6567,159.15,epoch,1218.56,0.05\n"
      "adam,V100,250,7.37,194.925,epoch,1436.60,0.05\n",
      "v100.csv");
  SweepFitReport r = fit_sweep(t.rows, std::nullopt, 3);
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_EQ(r.workloads[0].measured.size(), 4u);
  EXPECT_EQ(r.workloads[0].fit_caps, (std::vector<double>{100, 150, 250}));
  ASSERT_TRUE(r.workloads[0].mape_energy_pct.has_value());  // 200 W held out and predicted
  EXPECT_LT(*r.workloads[0].mape_energy_pct, 10.0);
}

TEST(TwinSweepTable, ChoosesTheEndsAndCapsCloserTowardsTheLowEnd) {
  EXPECT_EQ(choose_fit_caps({100, 125, 150, 175, 200, 225, 250}, 3),
            (std::vector<double>{100, 150, 250}));
  EXPECT_EQ(choose_fit_caps({100, 125, 150, 175, 200, 225, 250}, 4),
            (std::vector<double>{100, 125, 175, 250}));
  EXPECT_EQ(choose_fit_caps({100, 125, 150, 175, 200, 225, 250}, 2),
            (std::vector<double>{100, 250}));
  EXPECT_EQ(choose_fit_caps({100, 125}, 3), (std::vector<double>{100, 125}));
}

}  // namespace
}  // namespace regime::twin

namespace regime::twin {
namespace {

// The twin must beat the cube-law yardstick on real data, fitted from the same caps.
TEST(TwinSweepFit, TwinBeatsCubeLawOnZeusSweeps) {
  for (const char* gpu : {"V100", "RTX6000"}) {
    auto rows =
        read_sweep_table(std::string(REGIME_TEST_DATA_DIR) + "/zeus/" + gpu + ".sweep.csv").rows;
    double twin = *fit_sweep(rows, std::nullopt, 3, CurveModel::Twin).median_mape_energy_pct;
    double cube = *fit_sweep(rows, std::nullopt, 3, CurveModel::CubeLaw).median_mape_energy_pct;
    std::printf("%s: median energy error twin %.2f %%, cube law %.2f %%\n", gpu, twin, cube);
    EXPECT_LT(1.5 * twin, cube) << gpu;
  }
}

TEST(TwinSweepFit, CubeLawRecoversItsOwnCurve) {
  CubeLawFit truth{40, 200, 1.0, 3.0, 0};
  std::vector<CapPoint> pts;
  for (double cap : {100.0, 150.0, 250.0}) pts.push_back(truth.predict(cap));
  CubeLawFit fit = fit_cube_law(pts);
  for (double cap : {125.0, 200.0}) {
    CapPoint a = truth.predict(cap), b = fit.predict(cap);
    EXPECT_NEAR(b.time_s * b.avg_power_W, a.time_s * a.avg_power_W,
                0.01 * a.time_s * a.avg_power_W);
  }
}

}  // namespace
}  // namespace regime::twin
