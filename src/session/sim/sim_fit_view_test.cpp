// The sim fit's two presenters: each workload's row of the table shows the figures its JSON entry
// holds, and a figure with nothing held out is null in the JSON and "-" in the table.
#include "session/sim/sim_fit_view.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace regime::session {
namespace {

twin::SweepFitReport two_workloads() {
  twin::SweepFitReport r;
  twin::WorkloadFitReport bert;
  bert.workload = "bert";
  bert.gpu = "v100";
  bert.fit_caps = {100, 175, 250};
  bert.mape_energy_pct = 3.47;
  bert.mape_time_pct = 1.67;
  bert.predicted_best_cap_W = 125;
  bert.measured_best_cap_W = 100;
  bert.best_cap_regret_pct = 2.84;
  twin::WorkloadFitReport ncf = bert;
  ncf.workload = "ncf";
  ncf.fit_caps = {100, 250};
  ncf.mape_energy_pct.reset();  // every cap was fitted: nothing held out
  ncf.mape_time_pct.reset();
  ncf.predicted_best_cap_W = ncf.measured_best_cap_W = 150;
  ncf.best_cap_regret_pct = 0;
  twin::WorkloadFitReport resnet = bert;
  resnet.workload = "resnet50";
  resnet.gpu = "a100";
  resnet.spec_calibrated = false;
  r.workloads = {bert, ncf, resnet};
  r.median_mape_energy_pct = 3.47;
  r.median_best_cap_regret_pct = 1.42;
  return r;
}

std::string or_dash(const nlohmann::json& v) {
  return v.is_null() ? std::string("-") : fmt::format("{:.2f}", v.get<double>());
}

TEST(SimFitView, EachRowShowsTheFiguresOfItsJsonEntry) {
  const twin::SweepFitReport r = two_workloads();
  const nlohmann::json j = to_json(r);
  const std::string text = to_text(r);
  ASSERT_EQ(j["workloads"].size(), 3u);
  for (const nlohmann::json& w : j["workloads"]) {
    std::string caps;
    for (double c : w["fit_caps"]) caps += (caps.empty() ? "" : ",") + fmt::format("{:.0f}", c);
    const std::string row =
        fmt::format("{:<42} {:>8} {:>16} {:>9} {:>9} {:>9.0f} {:>9.0f} {:>8.2f}\n",
                    w["workload"].get<std::string>(), w["gpu"].get<std::string>(), caps,
                    or_dash(w["mape_energy_pct"]), or_dash(w["mape_time_pct"]),
                    w["predicted_best_cap_W"].get<double>(), w["measured_best_cap_W"].get<double>(),
                    w["best_cap_regret_pct"].get<double>());
    EXPECT_NE(text.find(row), std::string::npos) << row << "\n" << text;
  }
  EXPECT_NE(text.find(fmt::format(
                "median over 3 workloads: energy error {:.2f} %, best-cap energy regret {:.2f} %\n",
                j["median_mape_energy_pct"].get<double>(),
                j["median_best_cap_regret_pct"].get<double>())),
            std::string::npos)
      << text;
  EXPECT_EQ(text.rfind("workload ", 0), 0u) << text;
}

// A card whose spec was not calibrated across its range is named once, the calibrated one not.
TEST(SimFitView, AFitWithAnUncalibratedSpecIsSaidToBeLessSure) {
  const twin::SweepFitReport r = two_workloads();
  EXPECT_TRUE(to_json(r)["workloads"][0]["spec_calibrated"].get<bool>());
  EXPECT_FALSE(to_json(r)["workloads"][2]["spec_calibrated"].get<bool>());
  const std::string text = to_text(r);
  EXPECT_NE(text.find(fmt::format(
                "a100: the twin's constants are estimates, not calibrated across its limit range: "
                "its fits are less sure here (docs/twin.md, \"Where the twin is worse\") and their "
                "intervals {:.1f} points wider\n",
                100 * twin::kUncalibratedFitExtraRel)),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("v100: the twin's"), std::string::npos) << text;
}

TEST(SimFitView, AFigureWithNothingHeldOutIsNullAndADash) {
  const nlohmann::json j = to_json(two_workloads());
  EXPECT_TRUE(j["workloads"][1]["mape_energy_pct"].is_null());
  EXPECT_TRUE(j["workloads"][1]["mape_time_pct"].is_null());
  EXPECT_EQ(j["workloads"][0]["mape_time_pct"], 1.67);

  twin::SweepFitReport none;
  none.workloads.push_back({});
  none.workloads[0].workload = "bert";
  const nlohmann::json empty = to_json(none);
  EXPECT_TRUE(empty["median_mape_energy_pct"].is_null());
  EXPECT_TRUE(empty["median_best_cap_regret_pct"].is_null());
  // No median line without a held-out figure.
  EXPECT_EQ(to_text(none).find("median over"), std::string::npos);
}

}  // namespace
}  // namespace regime::session
