// Batch size and precision in the first guess: the curves are the fit of the V100 table, they
// hold on the RTX 6000's table and on a simulated corpus, and the predictors tell a small fp32
// batch from a large fp16 one.
#include "predict/batch_model.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "predict/eval.hpp"
#include "predict/predictor.hpp"
#include "trace/sweep_table.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"
#include "twin/spec.hpp"

namespace regime::predict {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SweepTable zeus(const std::string& gpu) {
  return read_sweep_table(std::string(REGIME_TEST_DATA_DIR) + "/zeus/" + gpu + ".sweep.csv");
}

TEST(BatchModel, TheCurvesAreTheFitOfTheV100Table) {
  const twin::GpuSpec v100 = twin::load_gpu_spec("v100");
  const auto families = batch_points(zeus("V100"));
  ASSERT_EQ(families.size(), fitted_batch_curves().size());
  for (const auto& [family, points] : families) {
    SCOPED_TRACE(family);
    const BatchCurve fit =
        fit_batch_curve(family, points, v100.static_power_W(), v100.default_limit_W);
    const auto kept = fitted_batch_curve(family);
    ASSERT_TRUE(kept);
    EXPECT_NEAR(kept->power_half_batch, fit.power_half_batch, 1e-4 * (1 + fit.power_half_batch));
    EXPECT_NEAR(kept->time_half_batch, fit.time_half_batch, 1e-4 * (1 + fit.time_half_batch));
  }
}

TEST(BatchModel, TheExponentIsTheV100TablesChoice) {
  const twin::GpuSpec v100 = twin::load_gpu_spec("v100");
  const auto families = batch_points(zeus("V100"));
  auto summed_pct = [&](double n) {
    double sum = 0;
    for (const auto& [family, points] : families) {
      const BatchCurve c =
          fit_batch_curve(family, points, v100.static_power_W(), v100.default_limit_W, n);
      sum += one_shot_power_mape_pct(c, points, v100.static_power_W(), v100.default_limit_W, n);
    }
    return sum;
  };
  const double chosen = summed_pct(kPowerBatchExponent);
  for (double n : {1.0, 1.25, 1.5, 2.0, 2.5, 3.0}) EXPECT_LT(chosen, summed_pct(n)) << n;
}

// The one-shot error per family on the table that was not fitted, against a flat curve.
TEST(BatchModel, HoldsOnTheRtx6000Table) {
  const twin::GpuSpec rtx = twin::load_gpu_spec("rtx6000");
  const BatchCurve flat{};
  for (const auto& [family, points] : batch_points(zeus("RTX6000"))) {
    const auto c = fitted_batch_curve(family);
    ASSERT_TRUE(c) << family;
    const double pct =
        one_shot_power_mape_pct(*c, points, rtx.static_power_W(), rtx.default_limit_W);
    const double flat_pct =
        one_shot_power_mape_pct(flat, points, rtx.static_power_W(), rtx.default_limit_W);
    const double time_pct = one_shot_time_mape_pct(*c, points);
    fmt::print("RTX6000 {:<18} power {:5.1f}% (flat: {:5.1f}%)  epoch time {:5.1f}%\n", family, pct,
               flat_pct, time_pct);
    // Measured 18.6% for shufflenetv2 (flat: 68.6%), 10.2% or less for the others.
    EXPECT_LT(pct, family == "shufflenetv2" ? 19.0 : 11.0) << family;
    EXPECT_LT(pct, flat_pct + 1.0) << family;
    if (family == "shufflenetv2") {
      EXPECT_LT(pct, flat_pct / 3) << family;
    }
  }
}

// The one-shot nameplate as `predict eval --by-family --examples all` runs it.
std::vector<EvalRow> one_shot_by_family(const std::vector<MeasuredCase>& cases) {
  auto p = one_shot(spec_baseline());
  EvalOptions o;
  o.by_family = true;
  o.examples = ExampleMode::All;
  return evaluate(*p, cases, o);
}

// On both tables.
TEST(BatchModel, OneShotPerFamilyOnBothTables) {
  std::vector<MeasuredCase> cases;
  for (const char* gpu : {"V100", "RTX6000"}) {
    auto c = cases_from_table(zeus(gpu), gpu);
    cases.insert(cases.end(), c.begin(), c.end());
  }
  const auto rows = one_shot_by_family(cases);
  ASSERT_EQ(rows.size(), 10u);
  for (const auto& r : rows) {
    ASSERT_TRUE(r.mape_power_pct);
    fmt::print("{:<8} {:<18} {:5.1f}%\n", r.gpu, r.group, *r.mape_power_pct);
    const bool held_out_shufflenet = r.gpu == "RTX6000" && r.group == "shufflenetv2";
    EXPECT_LT(*r.mape_power_pct, held_out_shufflenet ? 19.0 : 15.0) << r.gpu << " " << r.group;
  }
}

// A simulated corpus unlike the tables: the twin's profiles on five other GPUs, each profile's
// work, traffic and host time scaled with the batch and its SMs filled in proportion to the
// batch's pixels below the profile's own batch, with 2% noise on the power.
struct CorpusProfile {
  std::string name;
  int batch;
  double pixels;  // 0: not images
};

std::vector<MeasuredCase> batch_corpus() {
  const std::vector<CorpusProfile> profiles = {
      {"cnn5", 256, 1024},      {"resnet18_cifar", 128, 1024}, {"resnet50", 256, 50176},
      {"vgg16", 128, 50176},    {"densenet121", 128, 50176},   {"mobilenet_v2", 256, 50176},
      {"vit_b_16", 128, 50176}, {"transformer", 32, 0}};
  std::mt19937_64 rng(41);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<MeasuredCase> out;
  for (const char* gpu : {"t4", "l4", "a100", "h100", "h200"}) {
    const twin::GpuSpec spec = twin::load_gpu_spec(gpu);
    for (const auto& cp : profiles)
      for (int b = 8; b <= 1024; b *= 2) {
        twin::SimWorkloadProfile p = twin::sim_workload_profile(cp.name);
        const double r = static_cast<double>(b) / cp.batch;
        p.tflop_per_step *= r;
        p.gbyte_per_step *= 0.2 + 0.8 * r;
        p.host_s_per_step *= 0.3 + 0.7 * r;
        if (cp.pixels > 0) p.parallel_sms *= std::min(1.0, r * cp.pixels / 1024);
        const auto s = twin::steady_state(spec, twin::workload_on(p, spec), spec.default_limit_W);
        const std::string input = cp.pixels > 0 ? (cp.pixels > 1024 ? " 224x224" : " 32x32") : "";
        out.push_back({gpu, fmt::format("{}{} bs{}", cp.name, input, b),
                       s.avg_power_W * std::exp(noise(rng)), std::nullopt, "corpus"});
      }
  }
  return out;
}

TEST(BatchModel, HoldsOnASimulatedCorpus) {
  const auto cases = batch_corpus();
  const auto rows = one_shot_by_family(cases);
  ASSERT_EQ(rows.size(), 40u);
  double worst = 0;
  size_t over = 0;
  for (const auto& r : rows) {
    ASSERT_TRUE(r.mape_power_pct);
    // What a flat curve would score on the same group.
    std::vector<BatchPoint> points;
    for (const auto& c : cases)
      if (c.gpu == r.gpu && parse_workload(c.workload).model == r.group)
        points.push_back(
            {static_cast<double>(*parse_workload(c.workload).batch), c.avg_power_W, 0, ""});
    const twin::GpuSpec spec = twin::load_gpu_spec(r.gpu);
    const double flat_pct =
        one_shot_power_mape_pct(BatchCurve{}, points, spec.static_power_W(), spec.default_limit_W);
    fmt::print("corpus {:<5} {:<15} {:5.1f}% (flat: {:5.1f}%)\n", r.gpu, r.group, *r.mape_power_pct,
               flat_pct);
    EXPECT_LT(*r.mape_power_pct, flat_pct + 1.0) << r.gpu << " " << r.group;
    worst = std::max(worst, *r.mape_power_pct);
    if (*r.mape_power_pct > 15) ++over;
  }
  fmt::print("corpus: worst {:.1f}%, {} of {} GPU x family over 15%\n", worst, over, rows.size());
  // Measured: worst 23.8% (resnet50 on the H200), 4 of 40 over 15%.
  EXPECT_LT(worst, 25.0);
  EXPECT_LE(over, 4u);
}

Prediction ask(Predictor& p, const std::string& gpu, const std::string& workload) {
  return p.predict({gpu, parse_workload(workload), std::nullopt});
}

TEST(BatchModel, TheTwinTellsASmallFp32BatchFromALargeFp16One) {
  auto twin = twin_predictor();
  const Prediction small = ask(*twin, "v100", "resnet50 bs8 fp32");
  const Prediction large = ask(*twin, "v100", "resnet50 bs64 fp16");
  const Prediction large32 = ask(*twin, "v100", "resnet50 bs64 fp32");
  ASSERT_TRUE(small.time_per_step_s && large.time_per_step_s && large32.time_per_step_s);
  // A larger batch takes longer a step; fp32 takes longer than fp16 for the same batch, and its
  // samples cost more energy each.
  EXPECT_GT(*large.time_per_step_s, *small.time_per_step_s / 8 * 2);
  EXPECT_GT(*large32.time_per_step_s, 1.5 * *large.time_per_step_s);
  EXPECT_GT(*large32.energy_per_step_J, 1.5 * *large.energy_per_step_J);
  EXPECT_NE(*small.avg_power_W, *large.avg_power_W);
  EXPECT_THAT(small.note, HasSubstr("precision fp32 for the profile's bf16"));
  EXPECT_THAT(small.note, HasSubstr("from the profile's bs256 to bs8"));
  EXPECT_THAT(large.note, Not(HasSubstr("precision")));
  // A family no table here sweeps: power as the profile's, step time with the batch.
  const Prediction c8 = ask(*twin, "h200", "resnet18_cifar bs8");
  const Prediction c512 = ask(*twin, "h200", "resnet18_cifar bs512");
  EXPECT_DOUBLE_EQ(*c8.avg_power_W, *c512.avg_power_W);
  EXPECT_GT(*c512.time_per_step_s, 4 * *c8.time_per_step_s);
  EXPECT_THAT(c8.note, HasSubstr("no batch sweep of this family here"));
  EXPECT_THAT(ask(*twin, "h200", "resnet50 int8 bs64").note,
              HasSubstr("precision int8 not modelled"));
  EXPECT_THAT(ask(*twin, "h200", "gemm bs64").note, HasSubstr("batch 64 not modelled"));
}

TEST(BatchModel, OneShotMovesTheExampleAlongItsFamilysCurve) {
  auto p = one_shot(spec_baseline());
  PredictQuery q{"v100", parse_workload("cifar100/shufflenetv2/bs8/adam"),
                 Example{parse_workload("cifar100/shufflenetv2/bs1024/adam"), 195.0, std::nullopt,
                         std::nullopt}};
  const Prediction small = p->predict(q);
  ASSERT_TRUE(small.avg_power_W);
  // Measured 39 W; copying the example said 195 W.
  EXPECT_LT(*small.avg_power_W, 60);
  EXPECT_GT(*small.avg_power_W, twin::load_gpu_spec("v100").static_power_W());
  EXPECT_THAT(small.note, HasSubstr("scaled to bs8"));
  EXPECT_THAT(small.note, HasSubstr("the shufflenetv2 curve"));
  q.workload = parse_workload("cifar100/shufflenetv2/bs4096/adam");
  EXPECT_GT(*p->predict(q).avg_power_W, 190);
  // Another precision: the nameplate cannot tell them apart and says so.
  q.workload = parse_workload("cifar100/shufflenetv2/bs1024/adam fp32");
  EXPECT_THAT(p->predict(q).note, HasSubstr("does not tell them apart, assumed"));
}

TEST(BatchModel, AFamilyWithoutASweepKeepsItsPower) {
  const BatchCurve c = batch_curve_for(parse_workload("lstm bs64"));
  EXPECT_EQ(c.power_half_batch, 0);
  EXPECT_DOUBLE_EQ(power_at_batch_W(c, 36.5, 250, 120, 64, 8), 120);
  // A busy card draws its static power at least (a measurement under it is read as noise around
  // it: on the RTX 6000's NCF runs, 55-69 W against 67 W static, 8.0% against 9.8% copied).
  const BatchCurve rising = *fitted_batch_curve("shufflenetv2");
  EXPECT_DOUBLE_EQ(power_at_batch_W(rising, 36.5, 250, 30, 8, 1024), 36.5);
  EXPECT_GT(power_at_batch_W(rising, 36.5, 250, 100, 64, 1024), 100);
  EXPECT_DOUBLE_EQ(power_at_batch_W(rising, 36.5, 250, 240, 64, 4096), 250);
  // Step time from the fitted families' median per-step overhead (deepspeech2's, 17.4 samples).
  EXPECT_NEAR(step_time_ratio(c, 64, 8), (17.365 + 8) / (17.365 + 64), 1e-9);
  EXPECT_EQ(batch_curve_for(parse_workload("bert bs64")).family, "bert_base_uncased");
  EXPECT_EQ(batch_curve_for(parse_workload("vgg16 bs64"), "vgg16").family, "");
  EXPECT_FALSE(precision_rates("fp8"));
  EXPECT_LT(precision_rates("fp32")->compute_rate, precision_rates("tf32")->compute_rate);
}

}  // namespace
}  // namespace regime::predict
