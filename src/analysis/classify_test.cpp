#include "analysis/classify.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/measure.hpp"
#include "support/synthetic_trace.hpp"
#include "trace/csv.hpp"

namespace regime {
namespace {

using ::testing::HasSubstr;

RegimeReport classify_h200(const std::string& name) {
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR) / "h200";
  const Trace t = load_trace(dir / (name + ".trace.csv"), dir / (name + ".steps.csv"));
  return classify(measure(t), infer_gpu_info(t));
}

RegimeReport classify_synthetic(const synthetic::Spec& spec, const GpuSpecOverrides& o = {},
                                const MeasureOptions& mo = {}) {
  const Trace t = synthetic::make(spec);
  return classify(measure(t, mo), infer_gpu_info(t), o);
}

TEST(ClassifyH200, GemmIsCapBound) {
  const RegimeReport r = classify_h200("gemm_bf16");
  EXPECT_EQ(r.regime, Regime::CapBound);
  EXPECT_GE(r.confidence, 0.9);
  EXPECT_GT(r.evidence["sw_power_cap_time_pct"].get<double>(), 90);
  EXPECT_NEAR(r.measurement.energy_per_step_J, 22.99, 0.01 * 22.99);
}

TEST(ClassifyH200, Resnet50HasHeadroom) {
  const RegimeReport r = classify_h200("resnet50");
  EXPECT_EQ(r.regime, Regime::Headroom);
  EXPECT_GE(r.confidence, 0.7);
  EXPECT_LT(r.evidence["power_of_limit_pct"].get<double>(), 95);
  EXPECT_NEAR(r.measurement.energy_per_step_J, 33.95, 0.01 * 33.95);
}

TEST(ClassifyH200, Resnet18CifarIsUnderutilized) {
  const RegimeReport r = classify_h200("resnet18_cifar");
  EXPECT_EQ(r.regime, Regime::Underutilized);
  EXPECT_LT(r.evidence["mean_util_pct"].get<double>(), 30);
}

TEST(ClassifySynthetic, ThermalReasonsMakeItThermalBound) {
  synthetic::Spec s;
  s.reasons = reason::kSwThermal;
  s.temp_C = 87;
  s.sm_MHz = 1400;
  const RegimeReport r = classify_synthetic(s);
  EXPECT_EQ(r.regime, Regime::ThermalBound);
  EXPECT_EQ(r.evidence["thermal_time_pct"].get<double>(), 100);
  EXPECT_THAT(r.advice, HasSubstr("thermal"));
}

TEST(ClassifySynthetic, HotWithFallingClocksIsThermalBoundOnlyWhenTheThresholdIsKnown) {
  // No reason counters in the trace: falling clocks near the slowdown point are taken as heat.
  synthetic::Spec s;
  s.temp_C = 86;
  s.sm_MHz = 1500;
  GpuSpecOverrides o;
  o.max_sm_MHz = 1980;
  auto without_counters = [](Trace t) {
    for (auto& sample : t.samples) sample.reasons.reset();
    return t;
  };
  const Trace hot = without_counters(synthetic::make(s));
  EXPECT_NE(classify(measure(hot), infer_gpu_info(hot), o).regime, Regime::ThermalBound);
  o.slowdown_temp_C = 89;
  const RegimeReport r = classify(measure(hot), infer_gpu_info(hot), o);
  EXPECT_EQ(r.regime, Regime::ThermalBound);
  EXPECT_EQ(r.evidence["slowdown_temp_C"].get<double>(), 89);
  EXPECT_THAT(r.evidence["rule"].get<std::string>(), HasSubstr("no reason counters"));
}

// The counters say what held the clocks: a hot card held by its power cap (SW power cap 100% of
// the time, thermal 0%) is cap-bound, and a thermal controller is not what it needs.
TEST(ClassifySynthetic, AHotCardHeldByItsCapIsCapBound) {
  synthetic::Spec s;
  s.temp_C = 87;
  s.sm_MHz = 1500;
  s.power_W = 695;
  s.reasons = reason::kSwPowerCap;
  GpuSpecOverrides o;
  o.max_sm_MHz = 1980;
  o.slowdown_temp_C = 89;
  const RegimeReport r = classify_synthetic(s, o);
  EXPECT_EQ(r.regime, Regime::CapBound) << r.evidence.dump();
  EXPECT_TRUE(r.evidence["borderline_with"].is_null());
  EXPECT_EQ(r.evidence["limiting_reasons_pct"]["sw_power_cap"].get<double>(), 100);
  EXPECT_THAT(r.advice, HasSubstr("A thermal controller cannot help"));
  // Both at once, heat a little longer: thermal-bound, borderline with cap-bound.
  s.reasons = reason::kSwPowerCap | reason::kSwThermal;
  const RegimeReport both = classify_synthetic(s, o);
  EXPECT_EQ(both.regime, Regime::ThermalBound);
  EXPECT_EQ(both.evidence["borderline_with"], "cap-bound");
}

TEST(ClassifySynthetic, IdleWithoutStepsOrKernels) {
  synthetic::Spec s;
  s.steps = false;
  s.util_pct = 0;
  s.power_W = 85;
  const RegimeReport r = classify_synthetic(s);
  EXPECT_EQ(r.regime, Regime::Idle);
  EXPECT_TRUE(r.measurement.per_second);
  EXPECT_GE(r.confidence, 0.9);
}

TEST(ClassifySynthetic, NearTheLimitWithLoweredClocksIsCapBoundWithoutTheReasonBit) {
  synthetic::Spec s;
  s.limit_W = 410;
  s.power_W = 405;
  s.sm_MHz = 1500;
  GpuSpecOverrides o;
  o.max_sm_MHz = 1980;
  const RegimeReport r = classify_synthetic(s, o);
  EXPECT_EQ(r.regime, Regime::CapBound);
  EXPECT_THAT(r.evidence["rule"].get<std::string>(), HasSubstr("of the limit"));
  // The same draw under a higher limit override is headroom.
  o.enforced_limit_W = 700;
  s.sm_MHz = 1980;
  EXPECT_EQ(classify_synthetic(s, o).regime, Regime::Headroom);
}

TEST(ClassifySynthetic, LowUtilizationIsUnderutilizedEvenWithSteps) {
  synthetic::Spec s;
  s.util_pct = 3;
  s.power_W = 120;
  EXPECT_EQ(classify_synthetic(s).regime, Regime::Underutilized);
}

TEST(ClassifySynthetic, ShortRunsLoseConfidence) {
  synthetic::Spec s;
  s.power_W = 300;
  const double full = classify_synthetic(s).confidence;
  s.seconds = 1;
  const RegimeReport r = classify_synthetic(s);
  EXPECT_TRUE(r.evidence["short_run"].get<bool>());
  EXPECT_LT(r.confidence, full);
}

TEST(ClassifyIfLongEnough, NamesTheRegimeOfALongRunAndSaysWhyAShortOneHasNone) {
  synthetic::Spec s;
  s.power_W = 300;
  const Trace t = synthetic::make(s);
  const Measurement m = measure(t);
  const RegimeOrWhy named = classify_if_long_enough(m, infer_gpu_info(t));
  ASSERT_TRUE(named.report.has_value());
  EXPECT_TRUE(named.too_short.empty());
  EXPECT_EQ(to_json(*named.report), to_json(classify(m, infer_gpu_info(t))));

  Measurement brief = m;
  brief.window_end_s = brief.window_start_s + 0.2;
  const RegimeOrWhy none = classify_if_long_enough(brief, infer_gpu_info(t));
  EXPECT_FALSE(none.report.has_value());
  EXPECT_EQ(none.too_short, too_short_to_classify(brief));
  EXPECT_THAT(none.too_short, HasSubstr("0.20 s"));
}

TEST(ClassifyGpuInfo, InferredFromTheTraceAndOverridden) {
  const auto dir = std::filesystem::path(REGIME_TEST_DATA_DIR) / "h200";
  const Trace t = load_trace(dir / "gemm_bf16.trace.csv", std::nullopt);
  GpuInfo info = infer_gpu_info(t);
  EXPECT_EQ(info.enforced_limit_W, 700);
  EXPECT_EQ(info.max_sm_MHz, 1980);
  EXPECT_EQ(info.max_mem_MHz, 3201);
  EXPECT_FALSE(info.slowdown_temp_C.has_value());
  info =
      apply_overrides(info, {.enforced_limit_W = 500, .max_sm_MHz = 2000, .slowdown_temp_C = 89});
  EXPECT_EQ(info.enforced_limit_W, 500);
  EXPECT_EQ(info.max_sm_MHz, 2000);
  EXPECT_EQ(info.slowdown_temp_C, 89);
}

TEST(ClassifyJson, FollowsTheIssueContract) {
  const nlohmann::json j = to_json(classify_h200("resnet50"));
  EXPECT_EQ(j["regime"], "headroom");
  for (const char* key : {"regime", "confidence", "advice", "evidence", "measurement"})
    EXPECT_TRUE(j.contains(key)) << key;
  const auto& m = j["measurement"];
  for (const char* key : {"steps", "time_per_step_s", "time_per_step_ci_s", "energy_per_step_J",
                          "energy_per_step_ci_J", "avg_power_W", "energy_source"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_EQ(to_string(Regime::ThermalBound), "thermal-bound");
  EXPECT_EQ(to_string(Regime::CapBound), "cap-bound");
}

TEST(ClassifyFormat, ReadableReportCarriesRegimeEvidenceAndFigures) {
  const std::string text = format_report(classify_h200("gemm_bf16"));
  EXPECT_THAT(text, HasSubstr("regime: cap-bound"));
  EXPECT_THAT(text, HasSubstr("energy per step"));
  EXPECT_THAT(text, HasSubstr("sw_power_cap"));
  EXPECT_THAT(text, HasSubstr("evidence:"));
}

}  // namespace
}  // namespace regime
