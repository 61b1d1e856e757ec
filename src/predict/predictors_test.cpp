// Workload descriptions, answer parsing, the study's prompts, the non-LLM predictors and the
// evaluation, all pure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "predict/answer.hpp"
#include "predict/batch_model.hpp"
#include "predict/eval.hpp"
#include "predict/llm.hpp"
#include "predict/predictor.hpp"
#include "predict/prompt.hpp"
#include "predict/workload.hpp"
#include "support/error_of.hpp"
#include "trace/sweep_table.hpp"
#include "twin/spec.hpp"

namespace regime::predict {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using test::error_of;

TEST(WorkloadDescription, ReadsZeusNamesFreeTextAndKeys) {
  auto z = parse_workload("imagenet/resnet50/bs128/adadelta");
  EXPECT_EQ(z.model, "resnet50");
  EXPECT_EQ(z.batch, 128);
  EXPECT_EQ(z.dataset, "imagenet");
  auto f = parse_workload("ResNet50, batch 256, bf16, 224x224");
  EXPECT_EQ(f.model, "resnet50");
  EXPECT_EQ(f.batch, 256);
  EXPECT_EQ(f.precision, "bf16");
  EXPECT_EQ(f.input, "224x224");
  auto k = parse_workload("model=vgg16 bs=64 precision=fp16");
  EXPECT_EQ(k.model, "vgg16");
  EXPECT_EQ(k.batch, 64);
  auto g = parse_workload("gemm_bf16");
  EXPECT_EQ(g.model, "gemm");
  EXPECT_EQ(g.precision, "bf16");
  EXPECT_EQ(parse_workload("sim:resnet50").model, "resnet50");
  EXPECT_THAT(describe(z), HasSubstr("batch size 128"));
  EXPECT_THAT(error_of([] { parse_workload("  "); }), HasSubstr("empty workload"));
  EXPECT_THAT(error_of([] { parse_workload("resnet50 bs=0"); }), HasSubstr("outside 1..65536"));
  EXPECT_THAT(error_of([] { parse_workload("resnet50 bs=x"); }), HasSubstr("positive integer"));
  EXPECT_THAT(error_of([] { parse_workload("resnet50 colour=red"); }), HasSubstr("unknown key"));
}

// A batch past kMaxBatch would be carried along the curves without bound; anything a table or a
// person gives for a real job is read.
TEST(WorkloadDescription, ABatchOutsideTheAcceptedRangeIsRefusedByName) {
  EXPECT_EQ(parse_workload("resnet50 bs1").batch, 1);
  EXPECT_EQ(parse_workload("ncf batch 65536").batch, 65536);
  EXPECT_EQ(parse_workload("resnet50 bs=0064").batch, 64);
  EXPECT_THAT(error_of([] { parse_workload("resnet50 bs999999999"); }),
              HasSubstr("workload 'resnet50 bs999999999': batch size 999999999 is outside "
                        "1..65536"));
  EXPECT_THAT(error_of([] { parse_workload("ncf batch 65537"); }), HasSubstr("outside 1..65536"));
  EXPECT_THAT(error_of([] { parse_workload("resnet50 bs123456789012345678901234567890"); }),
              HasSubstr("outside 1..65536"));
  EXPECT_THAT(error_of([] { parse_workload("resnet50/bs0"); }), HasSubstr("outside 1..65536"));
  // Every workload of the tables here, up to NCF's bs16384, is read with its batch.
  for (const char* table : {"V100", "RTX6000"}) {
    const SweepTable t =
        read_sweep_table(std::string(REGIME_TEST_DATA_DIR) + "/zeus/" + table + ".sweep.csv");
    int largest = 0;
    for (const std::string& name : t.workloads()) {
      const WorkloadDesc w = parse_workload(name);
      ASSERT_TRUE(w.batch) << name;
      largest = std::max(largest, *w.batch);
    }
    EXPECT_EQ(largest, 16384) << table;
  }
}

TEST(PredictorChoice, AFamilysVariantIsCheckedWhereTheNameIsRead) {
  const PredictorChoice spec = choose_predictor("llm:spec");
  EXPECT_TRUE(spec.asks_llm());
  EXPECT_EQ(spec.rest, "spec");
  EXPECT_EQ(choose_predictor("twin:one-shot").rest, "");
  EXPECT_THAT(error_of([] { choose_predictor("llm:guess"); }),
              HasSubstr("unknown predictor 'llm:guess' (expected one of "));
  EXPECT_THAT(error_of([] { choose_predictor("llm:"); }), HasSubstr("llm:zero-shot, llm:spec"));
}

TEST(LlmAnswer, TakesTheJsonObjectAlsoInAFence) {
  auto a = parse_llm_answer(R"({"avg_power_W": 231.5, "regime": "cap-bound"})");
  EXPECT_DOUBLE_EQ(a.avg_power_W, 231.5);
  EXPECT_EQ(a.regime, "cap-bound");
  EXPECT_EQ(a.form, "json");
  auto f = parse_llm_answer(
      "Sure.\n```json\n{\"avg_power_W\": \"180 W\", \"regime\": "
      "\"power-limited\"}\n```");
  EXPECT_DOUBLE_EQ(f.avg_power_W, 180);
  EXPECT_EQ(f.regime, "cap-bound");
}

TEST(LlmAnswer, TakesANumberStatedInProse) {
  EXPECT_DOUBLE_EQ(parse_llm_answer("I expect it to draw about 64 W on average.").avg_power_W, 64);
  EXPECT_DOUBLE_EQ(parse_llm_answer("roughly 230 watts").avg_power_W, 230);
  EXPECT_DOUBLE_EQ(parse_llm_answer("Between 200 and 250 watts.").avg_power_W, 225);
  EXPECT_DOUBLE_EQ(parse_llm_answer("200-250 W").avg_power_W, 225);
  EXPECT_DOUBLE_EQ(parse_llm_answer(" 70 ").avg_power_W, 70);
  EXPECT_EQ(parse_llm_answer("about 64 W").form, "prose");
}

TEST(LlmAnswer, RefusesAnythingElseWithTheAnswerQuoted) {
  EXPECT_THAT(error_of([] { parse_llm_answer("It depends on many factors."); }),
              AllOf(HasSubstr("'It depends on many factors.'"), HasSubstr("no power in watts")));
  EXPECT_THAT(error_of([] { parse_llm_answer("idle 30 W, training 70 W, peak 90 W"); }),
              HasSubstr("3 powers"));
  EXPECT_THAT(error_of([] { parse_llm_answer(R"({"avg_power_W": "high"})"); }),
              HasSubstr("non-numeric"));
  EXPECT_THAT(error_of([] { parse_llm_answer(R"({"regime": "headroom"})"); }),
              HasSubstr("without \"avg_power_W\""));
  EXPECT_THAT(error_of([] { parse_llm_answer(R"({"avg_power_W": -5})"); }), HasSubstr("outside"));
  EXPECT_THAT(error_of([] { parse_llm_answer("9000 W"); }), HasSubstr("outside"));
  EXPECT_THAT(error_of([] { parse_llm_answer(std::string(100000, ' ') + "70 W"); }),
              HasSubstr("100004 characters long"));
}

TEST(StudyPrompts, SpecCarriesTheSpecFiguresAndOneShotTheExample) {
  const twin::GpuSpec t4 = twin::load_gpu_spec("t4");
  const WorkloadDesc w = parse_workload("resnet50 bs64 fp16 224x224");
  auto zero = build_prompt(PromptKind::ZeroShot, "Tesla T4", nullptr, w, std::nullopt);
  ASSERT_EQ(zero.size(), 2u);
  EXPECT_THAT(zero[1].content, HasSubstr("Tesla T4"));
  EXPECT_THAT(zero[1].content, HasSubstr("batch size 64"));
  EXPECT_THAT(zero[1].content, HasSubstr("avg_power_W"));
  EXPECT_THAT(zero[1].content, Not(HasSubstr("320 GB/s")));
  auto spec = build_prompt(PromptKind::Spec, "t4", &t4, w, std::nullopt);
  for (const char* fig :
       {"default power limit 70 W", "60-70 W", "1590 MHz", "40 streaming", "320 GB/s", "65 TFLOPS"})
    EXPECT_THAT(spec[1].content, HasSubstr(fig));
  Example ex{parse_workload("vgg16 bs32 fp16"), 69.4, std::nullopt, "cap-bound"};
  auto one = build_prompt(PromptKind::OneShot, "t4", &t4, w, ex);
  EXPECT_THAT(one[1].content, HasSubstr("vgg16 bs32 fp16"));
  EXPECT_THAT(one[1].content, HasSubstr("drew 69.4 W"));
  EXPECT_THAT(one[1].content, HasSubstr("320 GB/s"));
  EXPECT_THAT(one[1].content, HasSubstr("(model vgg16, batch size 32, precision fp16) drew"));
  ex.workload = parse_workload("vgg16 bs32");
  EXPECT_THAT(build_prompt(PromptKind::OneShot, "t4", &t4, w, ex)[1].content,
              HasSubstr("(model vgg16, batch size 32, precision not stated) drew"));
  EXPECT_THAT(error_of([&] { build_prompt(PromptKind::OneShot, "t4", &t4, w, std::nullopt); }),
              HasSubstr("measured example"));
  EXPECT_EQ(parse_prompt_kind("spec"), PromptKind::Spec);
  EXPECT_THAT(error_of([] { parse_prompt_kind("few-shot"); }), HasSubstr("zero-shot"));
}

// The card's fp32 and TF32 rates beside its 16-bit one, and the workload's precision, so that an
// LLM can tell a small fp32 batch from a large fp16 one.
TEST(StudyPrompts, SpecCarriesThePrecisionRatesAndTheWorkloadsPrecision) {
  const twin::GpuSpec t4 = twin::load_gpu_spec("t4"), a100 = twin::load_gpu_spec("a100");
  auto user = [](const twin::GpuSpec& spec, const std::string& workload) {
    return build_prompt(PromptKind::Spec, spec.model, &spec, parse_workload(workload),
                        std::nullopt)[1]
        .content;
  };
  const std::string small = user(t4, "resnet50 bs8 fp32"), large = user(t4, "resnet50 bs64 fp16");
  EXPECT_THAT(small, HasSubstr("peak dense fp16/bf16 tensor throughput 65 TFLOPS; dense fp32 "
                               "throughput 8.1 TFLOPS; no TF32 tensor cores (TF32 runs as fp32);"));
  EXPECT_THAT(small, HasSubstr("Numeric precision of the workload: fp32."));
  EXPECT_THAT(large, HasSubstr("Numeric precision of the workload: fp16."));
  EXPECT_THAT(user(t4, "resnet50 bs64"),
              HasSubstr("Numeric precision of the workload: not stated."));
  const std::string on_a100 = user(a100, "resnet50 bs64 tf32");
  EXPECT_THAT(on_a100, HasSubstr("dense fp32 throughput 19.5 TFLOPS; dense TF32 tensor throughput "
                                 "156 TFLOPS;"));
  EXPECT_THAT(on_a100, HasSubstr("Numeric precision of the workload: tf32."));
  // A spec file without the figures says nothing of either: its missing TF32 is not "none".
  twin::GpuSpec bare = t4;
  bare.fp32_tflops = 0;
  EXPECT_THAT(user(bare, "resnet50 bs64 fp32"), Not(HasSubstr("fp32 throughput")));
  EXPECT_THAT(user(bare, "resnet50 bs64 fp32"), Not(HasSubstr("TF32")));
  // The bare prompt stays the study's: the name and the workload only.
  EXPECT_THAT(build_prompt(PromptKind::ZeroShot, "t4", nullptr, parse_workload("resnet50 bs8 fp32"),
                           std::nullopt)[1]
                  .content,
              Not(HasSubstr("TFLOPS")));
}

TEST(SpecBaseline, SaysTheDefaultLimitAndCapBound) {
  auto p = spec_baseline()->predict({"T4", parse_workload("resnet50"), std::nullopt});
  EXPECT_DOUBLE_EQ(p.avg_power_W.value_or(0), 70);
  EXPECT_EQ(p.regime, "cap-bound");
  EXPECT_FALSE(p.time_per_step_s);
}

TEST(TwinPredictor, GivesTheSteadyStateOfAKnownProfileAndNothingForAnUnknownOne) {
  auto twin = twin_predictor();
  // H200 at 700 W: the profiles were calibrated on these traces (616 W ResNet-50, about 688 W
  // GEMMs, 150 W ResNet-18 on CIFAR), so the twin lands near them.
  auto r50 = twin->predict({"h200", parse_workload("resnet50"), std::nullopt});
  ASSERT_TRUE(r50.avg_power_W);
  EXPECT_NEAR(*r50.avg_power_W, 616, 616 * 0.10);
  EXPECT_EQ(r50.regime, "headroom");
  EXPECT_TRUE(r50.time_per_step_s && r50.energy_per_step_J && r50.power_half_width_rel);
  auto gemm = twin->predict({"h200", parse_workload("gemm_bf16"), std::nullopt});
  EXPECT_EQ(gemm.regime, "cap-bound");
  auto small = twin->predict({"h200", parse_workload("resnet18_cifar"), std::nullopt});
  EXPECT_EQ(small.regime, "underutilized");
  auto bert = twin->predict({"V100", parse_workload("squad/bert_base_uncased/bs8/adamw"), {}});
  EXPECT_TRUE(bert.avg_power_W);
  auto none = twin->predict({"V100", parse_workload("cifar100/shufflenetv2/bs8/adam"), {}});
  EXPECT_FALSE(none.avg_power_W);
  EXPECT_THAT(none.note, HasSubstr("no profile of 'shufflenetv2'"));
}

TEST(OneShotCalibration, ScalesTheBaseByTheExample) {
  auto base = one_shot(spec_baseline());
  EXPECT_EQ(base->name(), "spec-baseline:one-shot");
  Example ex{parse_workload("ncf"), 38, std::nullopt, "headroom"};
  auto p = base->predict({"V100", parse_workload("resnet50"), ex});
  EXPECT_DOUBLE_EQ(p.avg_power_W.value_or(0), 38);  // the nameplate rule scaled to the example
  EXPECT_EQ(p.regime, "headroom");
  auto twin1 = one_shot(twin_predictor());
  auto plain = twin_predictor()->predict({"V100", parse_workload("resnet50"), {}});
  auto at_ex = twin_predictor()->predict({"V100", parse_workload("transformer"), {}});
  Example ex2{parse_workload("transformer"), 0.9 * *at_ex.avg_power_W, std::nullopt, {}};
  auto scaled = twin1->predict({"V100", parse_workload("resnet50"), ex2});
  EXPECT_NEAR(*scaled.avg_power_W, 0.9 * *plain.avg_power_W, 1e-9);
  EXPECT_THAT(error_of([&] {
                twin1->predict({"V100", parse_workload("resnet50"), {}});
              }),
              HasSubstr("needs a measured example"));
}

SweepTable small_table() {
  return parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit\n"
      "imagenet/resnet50/bs8,V100,250,10,240,epoch\n"
      "imagenet/resnet50/bs8,V100,200,11,199,epoch\n"
      "movielens-1m/ncf/bs8,V100,250,10,50,epoch\n"
      "movielens-1m/ncf/bs8,V100,200,10,50,epoch\n"
      "movielens-1m/ncf/bs16,V100,250,10,100,epoch\n",
      "small");
}

TEST(PredictionEval, TakesTheHighestCapAndScoresPowerAndRegime) {
  auto cases = cases_from_table(small_table(), "small");
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_DOUBLE_EQ(cases[0].avg_power_W, 240);
  EXPECT_EQ(cases[0].regime, "cap-bound");  // 240 >= 0.95 x 250
  EXPECT_EQ(cases[1].regime, "headroom");
  auto base = spec_baseline();
  auto rows = evaluate(*base, cases);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].n, 3u);
  // |250-240|/240, |250-50|/50, |250-100|/100 in %.
  EXPECT_NEAR(*rows[0].mape_power_pct, (10.0 / 240 + 4 + 1.5) / 3 * 100, 1e-9);
  EXPECT_NEAR(*rows[0].regime_accuracy, 1.0 / 3, 1e-12);
  ASSERT_TRUE(rows[0].mape_ci_pct);
  EXPECT_LE(rows[0].mape_ci_pct->first, *rows[0].mape_power_pct);
  EXPECT_GE(rows[0].mape_ci_pct->second, *rows[0].mape_power_pct);
}

// A table that names its default limit below its highest cap (a 450 W card swept to 600 W): the
// case is the default's row, its regime judged against the default, and the batch curve's points
// are the default's too.
TEST(PredictionEval, ATableNamingItsDefaultIsReadAtTheDefault) {
  const SweepTable t = parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit,default_limit_W\n"
      "cifar100/shufflenetv2/bs64,A40,600,10,520,epoch,450\n"
      "cifar100/shufflenetv2/bs64,A40,450,11,440,epoch,450\n"
      "cifar100/shufflenetv2/bs64,A40,300,14,295,epoch,450\n"
      "cifar100/shufflenetv2/bs8,A40,600,40,150,epoch,450\n"
      "cifar100/shufflenetv2/bs8,A40,450,41,140,epoch,450\n",
      "named");
  const auto cases = cases_from_table(t, "named");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_DOUBLE_EQ(cases[0].avg_power_W, 440);
  EXPECT_EQ(cases[0].regime, "cap-bound");  // 440 >= 0.95 x 450; 440 < 0.95 x 600
  EXPECT_DOUBLE_EQ(cases[1].avg_power_W, 140);
  const auto points = batch_points(t).at("shufflenetv2");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_DOUBLE_EQ(points[0].avg_power_W, 440);
  EXPECT_DOUBLE_EQ(points[0].time_s, 11);
  EXPECT_DOUBLE_EQ(points[1].avg_power_W, 140);
}

TEST(PredictionEval, OneShotUsesTheFirstCaseOrEachInTurnAndFamiliesGroup) {
  auto cases = cases_from_table(small_table(), "small");
  auto os = one_shot(spec_baseline());
  auto first = evaluate(*os, cases);
  ASSERT_EQ(first[0].n, 2u);  // the example (the first case) is not scored
  // Predicted 240 for both: |240-50|/50 and |240-100|/100.
  EXPECT_NEAR(*first[0].mape_power_pct, (380 + 140) / 2.0, 1e-9);
  EvalOptions all;
  all.examples = ExampleMode::All;
  EXPECT_EQ(evaluate(*os, cases, all)[0].n, 6u);
  EvalOptions fam;
  fam.by_family = true;
  auto by = evaluate(*os, cases, fam);
  ASSERT_EQ(by.size(), 2u);
  EXPECT_EQ(by[0].group, "resnet50");
  EXPECT_EQ(by[0].n, 0u);  // one workload: no other to score
  EXPECT_EQ(by[1].group, "ncf");
  // The example, 50 W at bs8, moved along the ncf curve (flat) to bs16, for 100 W.
  const double moved_W = power_at_batch_W(*fitted_batch_curve("ncf"), 36.5, 250, 50, 8, 16);
  EXPECT_DOUBLE_EQ(moved_W, 50);
  EXPECT_NEAR(*by[1].mape_power_pct, 100 - moved_W, 1e-9);
}

TEST(PredictionEval, CountsWhatAPredictorCannotAnswer) {
  auto cases = cases_from_table(parse_sweep_table("workload,gpu,cap_W,time_s,avg_power_W,unit\n"
                                                  "cifar100/shufflenetv2/bs8,V100,250,1,100,epoch\n"
                                                  "imagenet/resnet50/bs8,V100,250,1,220,epoch\n",
                                                  "t"),
                                "t");
  auto twin = twin_predictor();
  std::vector<std::string> skipped;
  EvalOptions o;
  o.on_skip = [&](const std::string& l) { skipped.push_back(l); };
  auto rows = evaluate(*twin, cases, o);
  EXPECT_EQ(rows[0].n, 1u);
  EXPECT_EQ(rows[0].unanswered, 1u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_THAT(skipped[0], HasSubstr("shufflenetv2"));
}

}  // namespace
}  // namespace regime::predict
