// Sweep-table rows as Measurements: the interval a row carries, and the round trip.
#include "analysis/sweep_rows.hpp"

#include <gtest/gtest.h>

namespace regime {
namespace {

TEST(SweepRows, ARowBecomesAMeasurementWithItsInterval) {
  auto t = parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit,energy_ci_J,steps\n"
      "w,T4,70,0.5,69,step,0.4,100\n",
      "t.csv");
  auto m = to_measurement(t.rows[0]);
  EXPECT_DOUBLE_EQ(m.energy_per_step_J, 0.5 * 69);
  EXPECT_DOUBLE_EQ(m.energy_per_step_ci_J.first, 0.5 * 69 - 0.4);
  EXPECT_EQ(m.steps, 100);
  SweepRow back = to_sweep_row("w", "T4", 70, m, "step");
  EXPECT_DOUBLE_EQ(back.energy_per_unit_J(), 0.5 * 69);
  EXPECT_NEAR(*back.energy_ci_J, 0.4, 1e-12);
}

}  // namespace
}  // namespace regime
