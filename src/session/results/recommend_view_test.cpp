// The recommend report's two presenters: each workload's row of the text shows the cap and the
// energy change its JSON decision holds.
#include "session/results/recommend_view.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "session/results/recommend.hpp"

namespace regime::session {
namespace {

TEST(RecommendView, EachRowShowsTheCapAndEnergyChangeOfItsJsonDecision) {
  RecommendRequest request;
  request.sweep_file = std::string(REGIME_TEST_DATA_DIR) + "/zeus/V100.sweep.csv";
  request.objective = plan::parse_objective("energy");
  const RecommendReport report = recommend(request);
  const nlohmann::json j = to_json(report);
  const std::string text = to_text(report);
  ASSERT_EQ(j["workloads"].size(), report.decided.size());
  ASSERT_GE(report.decided.size(), 2u);
  EXPECT_EQ(text.rfind(fmt::format("{}: {} workload(s), objective energy\n", request.sweep_file,
                                   report.decided.size()),
                       0),
            0u)
      << text;
  for (const nlohmann::json& w : j["workloads"]) {
    const nlohmann::json& d = w["decision"];
    const std::string row =
        fmt::format("{:<48} {:<8} {:>8.1f} {:>+9.1f}", w["workload"].get<std::string>(),
                    w["gpu"].get<std::string>(), d["cap_W"].get<double>(),
                    d["energy_change_pct"].get<double>());
    EXPECT_NE(text.find(row), std::string::npos) << row;
  }
}

}  // namespace
}  // namespace regime::session
