#include "report/sweep.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "trace/sweep_table.hpp"

namespace regime::report {
namespace {

plan::ProbeResult at(double cap_W, double energy_J, double time_s) {
  plan::ProbeResult p;
  p.cap_W = cap_W;
  p.measurement.energy_per_step_J = energy_J;
  p.measurement.energy_per_step_ci_J = {energy_J - 0.5, energy_J + 0.5};
  p.measurement.time_per_step_s = time_s;
  p.measurement.time_per_step_ci_s = {time_s * 0.99, time_s * 1.01};
  p.measurement.steps = 100;
  return p;
}

TEST(ReportSweep, PointsAscendByCapWithIntervalsAndTheDecision) {
  plan::Decision d;
  d.cap_W = 500;
  d.keep_default = false;
  d.energy_change_pct = -12;
  d.reason = "saves energy";
  // Measured in search order, 600 W twice: the last measurement of a cap is the one shown.
  d.time_change_pct = 10;
  d.basis = "intervals";
  const std::vector<plan::ProbeResult> probes = {at(700, 40, 0.05), at(500, 35, 0.055),
                                                 at(600, 39, 0.051), at(600, 37, 0.052)};
  const plan::DecisionView view =
      plan::decision_view(d, probes, plan::parse_objective("max-slowdown:10"), 700, "step");
  const nlohmann::json s = sweep_section(probes, d, view);
  ASSERT_EQ(s["points"].size(), 3u);
  EXPECT_EQ(s["probes"], 4);
  EXPECT_EQ(s["points"][0]["cap_W"], 500.0);
  EXPECT_EQ(s["points"][1]["cap_W"], 600.0);
  EXPECT_EQ(s["points"][1]["energy_per_step_J"], 37.0);
  EXPECT_EQ(s["points"][2]["energy_per_step_ci_J"], nlohmann::json({39.5, 40.5}));
  EXPECT_EQ(s["decision"]["cap_W"], 500.0);
  EXPECT_FALSE(s["decision"]["keep_default"].get<bool>());
  EXPECT_EQ(s["default_limit_W"], 700.0);
  // The page prints the view's figures: the decision's change with its interval, and the time
  // bound that only the point estimate meets (+10% [+8.9, +11.1]).
  EXPECT_EQ(s["decision"]["energy_change_pct"], -12.0);
  ASSERT_TRUE(s["decision"]["time_change_ci_pct"].is_array());
  EXPECT_NEAR(s["decision"]["time_change_ci_pct"][1].get<double>(), 100 * (1.01 / 0.99 * 1.1 - 1),
              1e-9);
  EXPECT_TRUE(s["decision"]["only_point_estimate_meets_time_bound"].get<bool>());
  // A saving not called beyond the noise says so, for the page's "Certainty:" line.
  EXPECT_FALSE(s["decision"]["saving_beyond_noise"].get<bool>());
  EXPECT_NE(s["decision"]["certainty"].get<std::string>().find("within the noise"),
            std::string::npos);
}

SweepRow row(double cap_W, double energy_J, double time_s) {
  SweepRow r;
  r.workload = "sim:resnet50";
  r.gpu = "NVIDIA H200";
  r.cap_W = cap_W;
  r.time_s = time_s;
  r.avg_power_W = energy_J / time_s;
  r.unit = "step";
  r.energy_J = energy_J;
  r.energy_lo_J = energy_J - 0.4;
  r.energy_hi_J = energy_J + 0.4;
  r.time_lo_s = time_s * 0.99;
  r.time_hi_s = time_s * 1.01;
  r.steps = 200;
  return r;
}

SweepRecord kept_sweep() {
  // Kept highest cap first, as a sweep writes its table.
  return SweepRecord{
      .id = 4,
      .started_at_utc = "2026-12-05T18:00:00Z",
      .kind = "study",
      .device = "sim:h200",
      .gpu_name = "NVIDIA H200",
      .gpu_uuid = "GPU-sim-h200",
      .workload = "sim:resnet50",
      .strategy = "adaptive",
      .objective = "max-slowdown:10",
      .default_limit_W = 700,
      .table_csv =
          format_sweep_table({row(700, 40, 0.05), row(600, 36, 0.052), row(500, 35, 0.06)}),
      .decision = {{"cap_W", 600.0},
                   {"keep_default", false},
                   {"energy_change_pct", -10.0},
                   {"reason", "saves energy within the time budget"}},
      .report = {},
      .provenance = {},
      .unreadable = {},
  };
}

TEST(ReportSweep, AKeptSweepIsDrawnFromItsTableWithTheDecisionAsKept) {
  RunRecord probe;  // another pair in the store, for the comparison
  probe.id = 4;     // the sweep's id too: the sweep's row must not hide it
  probe.gpu_name = "NVIDIA A100";
  probe.workload = "sim:gemm";
  probe.status = "done";
  probe.report = {{"regime", "cap-bound"},
                  {"measurement", {{"energy_per_step_J", 20.0}, {"time_per_step_s", 0.02}}}};
  const nlohmann::json page = sweep_page_data(kept_sweep(), std::string("cap-bound"), {probe},
                                              {.columns = 100, .generated_utc = ""});
  EXPECT_EQ(page["kind"], "sweep");
  EXPECT_EQ(page["title"], "Regime sweep:4: sim:resnet50 on NVIDIA H200");
  EXPECT_TRUE(page["timeline"].is_null());
  EXPECT_NE(page["no_timeline"].get<std::string>().find("sweep:4 keeps"), std::string::npos);
  const nlohmann::json& sw = page["sweep"];
  ASSERT_EQ(sw["points"].size(), 3u);
  EXPECT_EQ(sw["points"][0]["cap_W"], 500.0);
  EXPECT_EQ(sw["points"][2]["cap_W"], 700.0);
  EXPECT_NEAR(sw["points"][1]["energy_per_step_ci_J"][0].get<double>(), 35.6, 1e-9);
  EXPECT_EQ(sw["decision"]["cap_W"], 600.0);
  EXPECT_EQ(sw["decision"]["reason"], "saves energy within the time budget");
  EXPECT_EQ(sw["objective"], "max-slowdown:10");
  EXPECT_EQ(sw["strategy"], "adaptive");
  EXPECT_EQ(sw["of"], "study");
  EXPECT_EQ(sw["default_limit_W"], 700.0);
  // The cards: the regime kept, and the default limit's figures from the table.
  EXPECT_EQ(page["regime"]["name"], "cap-bound");
  EXPECT_EQ(page["default_cap_W"], 700.0);
  EXPECT_DOUBLE_EQ(page["measurement"]["energy_per_step_J"].get<double>(), 40);
  EXPECT_EQ(page["measurement"]["per"], "step");
  const nlohmann::json& rows = page["comparison"]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["id"], 4);  // the probe, newest by id
  EXPECT_TRUE(rows[1]["current"].get<bool>());
}

TEST(ReportSweep, AKeptSweepWithNoRegimeSaysNoneAndOneThatDoesNotReadIsRefused) {
  const nlohmann::json page =
      sweep_page_data(kept_sweep(), std::nullopt, {}, {.columns = 100, .generated_utc = ""});
  EXPECT_TRUE(page["regime"]["name"].is_null());

  SweepRecord undecided = kept_sweep();
  undecided.decision = nullptr;
  EXPECT_THROW(sweep_page_data(undecided, std::nullopt, {}, {}), Error);
  SweepRecord unreadable = kept_sweep();
  unreadable.unreadable = "decision_json is not JSON";
  try {
    kept_sweep_section(unreadable);
    FAIL() << "an unreadable row was drawn";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_NE(std::string(e.what()).find("decision_json is not JSON"), std::string::npos);
  }
  SweepRecord two = kept_sweep();
  SweepRow other = row(700, 10, 0.01);
  other.workload = "sim:gemm";
  two.table_csv = format_sweep_table({row(700, 40, 0.05), other});
  EXPECT_THROW(kept_sweep_section(two), Error);
}

}  // namespace
}  // namespace regime::report
