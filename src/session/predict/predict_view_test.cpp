// The predict reports' two presenters: the text and the JSON of one report show the same figures.
#include "session/predict/predict_view.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "session/predict/predict.hpp"

namespace regime::session {
namespace {

TEST(PredictView, TextAndJsonShowTheSamePowerEnergyAndRegime) {
  PredictReport r;
  r.gpu = "t4";
  r.workload = "resnet50 bs64 fp16";
  r.prediction.predictor = "twin";
  r.prediction.avg_power_W = 68.4;
  r.prediction.power_half_width_rel = 0.12;
  r.prediction.energy_per_step_J = 12.5;
  r.prediction.regime = "cap-bound";
  r.prediction.note = "the twin at the default limit";
  const nlohmann::json j = to_json(r);
  const std::string text = to_text(r);
  EXPECT_DOUBLE_EQ(j["avg_power_W"].get<double>(), 68.4);
  EXPECT_NE(text.find("mean power at the default limit: 68.4 W (+-12%)"), std::string::npos)
      << text;
  EXPECT_DOUBLE_EQ(j["energy_per_step_J"].get<double>(), 12.5);
  EXPECT_TRUE(j["time_per_step_s"].is_null());
  EXPECT_NE(text.find("time per step: -   energy per step: 12.5 J"), std::string::npos) << text;
  EXPECT_EQ(j["regime"], "cap-bound");
  EXPECT_NE(text.find("  regime: cap-bound\n"), std::string::npos) << text;
}

TEST(PredictView, APromptOnlyReportShowsTheSameMessagesInBoth) {
  PredictReport r;
  r.prompt_only = true;
  r.prompt = {{"system", "You predict GPU power."}, {"user", "t4, resnet50"}};
  EXPECT_EQ(to_json(r),
            (nlohmann::json{{"messages",
                             {{{"role", "system"}, {"content", "You predict GPU power."}},
                              {{"role", "user"}, {"content", "t4, resnet50"}}}}}));
  EXPECT_EQ(to_text(r), "[system]\nYou predict GPU power.\n[user]\nt4, resnet50\n");
}

TEST(PredictView, AnEvalRowShowsItsErrorAndRegimeAccuracyInBoth) {
  EvalReport r;
  r.cases.resize(4);
  predict::EvalRow row;
  row.gpu = "V100";
  row.predictor = "spec-baseline";
  row.n = 4;
  row.mape_power_pct = 7.3;
  row.regime_accuracy = 0.75;
  row.regime_n = 4;
  r.rows.push_back(row);
  const nlohmann::json j = to_json(r);
  const std::string text = to_text(r, false);
  EXPECT_EQ(j["cases"], 4);
  EXPECT_DOUBLE_EQ(j["rows"][0]["mape_power_pct"].get<double>(), 7.3);
  EXPECT_DOUBLE_EQ(j["rows"][0]["regime_accuracy"].get<double>(), 0.75);
  const size_t row_at = text.find("\nV100 ");
  ASSERT_NE(row_at, std::string::npos) << text;
  const std::string shown = text.substr(row_at + 1, text.find('\n', row_at + 1) - row_at - 1);
  EXPECT_NE(shown.find(" 7.3 "), std::string::npos) << shown;
  EXPECT_NE(shown.find(" 75% /4 "), std::string::npos) << shown;
  EXPECT_EQ(text.rfind("4 measured case(s)\n", 0), 0u);
}

TEST(PredictView, ByFamilyTheSummaryPerPredictorIsInBoth) {
  EvalReport r;
  for (auto [gpu, family, pct] : {std::tuple{"V100", "ncf", 2.9}, std::tuple{"V100", "bert", 2.3},
                                  std::tuple{"RTX6000", "shufflenetv2", 18.6}}) {
    predict::EvalRow row;
    row.gpu = gpu;
    row.group = family;
    row.predictor = "twin:one-shot";
    row.n = 3;
    row.mape_power_pct = pct;
    r.rows.push_back(row);
  }
  r.families = predict::summarize_families(r.rows);
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_DOUBLE_EQ(r.families[0].median_pct, 2.9);
  EXPECT_EQ(r.families[0].over_goal, 1u);
  const nlohmann::json j = to_json(r);
  EXPECT_DOUBLE_EQ(j["families"][0]["worst_mape_pct"].get<double>(), 18.6);
  EXPECT_EQ(j["families"][0]["worst_family"], "shufflenetv2");
  EXPECT_EQ(j["rows"][2]["family"], "shufflenetv2");
  const std::string text = to_text(r, true);
  EXPECT_NE(text.find("twin:one-shot: 3 GPU x family row(s), MAPE median 2.9%, worst 18.6% "
                      "(RTX6000 shufflenetv2), 1 over 15%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("RTX6000        shufflenetv2         twin:one-shot"), std::string::npos)
      << text;
}

TEST(PredictView, SkippedCasesAreShownTenThenCounted) {
  EvalReport r;
  for (int i = 0; i < 12; ++i) r.skipped.push_back("case " + std::to_string(i));
  const auto lines = skipped_lines(r);
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[0], "regime: no prediction: case 0");
  EXPECT_EQ(lines[10], "regime: ... and 2 more without a prediction (the rows count them)");
}

}  // namespace
}  // namespace regime::session
