// Batch size and precision in the first guess: the curves' form holds fitted on either Zeus table
// and scored on the other and on a simulated corpus, the shipped curves are the fit of both, and
// the predictors tell a small fp32 batch from a large fp16 one.
#include "predict/batch_model.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
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

SweepTable zeus(const std::string& table) {
  return read_sweep_table(std::string(REGIME_TEST_DATA_DIR) + "/zeus/" + table + ".sweep.csv");
}

// A Zeus table's families, each with the card's static power, default limit and 16-bit rate (the
// tables say no precision).
std::map<std::string, BatchSweep> zeus_sweeps(const std::string& table, const std::string& gpu) {
  const SweepTable t = zeus(table);
  const twin::GpuSpec spec = twin::load_gpu_spec(gpu);
  std::map<std::string, BatchSweep> out;
  for (auto& [family, points] : batch_points(t))
    out[family] = {points, spec.static_power_W(), spec.default_limit_W,
                   compute_rate_tflops(spec, "")};
  return out;
}
std::map<std::string, BatchSweep> v100() { return zeus_sweeps("V100", "v100"); }
std::map<std::string, BatchSweep> rtx6000() { return zeus_sweeps("RTX6000", "rtx6000"); }

SweepTable h200_table() {
  return read_sweep_table(std::string(REGIME_TEST_DATA_DIR) + "/batch_sweeps/h200.sweep.csv");
}

// The real H200 batch sweep's families, one sweep per precision (bf16 first), each at the card's
// rate at that precision.
std::map<std::string, std::vector<BatchSweep>> h200_sweeps() {
  const twin::GpuSpec spec = twin::load_gpu_spec("h200");
  std::map<std::string, std::map<std::string, BatchSweep>> by;
  for (auto& [family, points] : batch_points(h200_table()))
    for (const BatchPoint& p : points) {
      BatchSweep& sw = by[family][p.precision];
      sw.points.push_back(p);
      sw.static_W = spec.static_power_W();
      sw.cap_W = spec.default_limit_W;
      sw.rate_tflops = compute_rate_tflops(spec, p.precision);
    }
  std::map<std::string, std::vector<BatchSweep>> out;
  for (auto& [family, sweeps] : by)
    for (auto& [precision, sw] : sweeps) out[family].push_back(sw);
  return out;
}

// Every sweep the shipped curves are fitted on, by family: the two Zeus tables' and the H200's.
std::map<std::string, std::vector<BatchSweep>> every_sweep() {
  std::map<std::string, std::vector<BatchSweep>> out;
  for (const auto& table : {v100(), rtx6000()})
    for (const auto& [family, sweep] : table) out[family].push_back(sweep);
  for (auto& [family, sweeps] : h200_sweeps())
    out[family].insert(out[family].end(), sweeps.begin(), sweeps.end());
  return out;
}

// Each family's curve fitted on all but one of its sweeps and scored on that one; the largest.
double held_out_pct(const std::string& family, const std::vector<BatchSweep>& sweeps) {
  double worst = 0;
  for (size_t i = 0; i < sweeps.size(); ++i) {
    std::vector<BatchSweep> rest;
    for (size_t j = 0; j < sweeps.size(); ++j)
      if (j != i) rest.push_back(sweeps[j]);
    worst = std::max(worst, one_shot_power_mape_pct(fit_batch_curve(family, rest), sweeps[i]));
  }
  return worst;
}

TEST(BatchModel, TheCurvesAreTheFitOfEveryTable) {
  const auto all = every_sweep();
  EXPECT_EQ(all.size(), fitted_batch_curves().size());
  for (const auto& [family, sweeps] : all) {
    SCOPED_TRACE(family);
    const BatchCurve fit = fit_batch_curve(family, sweeps);
    fmt::print("{:<18} h0 {:.6g} at {:g} TFLOPS, k {:.6g}, f {:.6g}, held out {:.2f}%\n", family,
               fit.power_half_batch, fit.ref_rate_tflops, fit.time_half_batch, fit.full_share,
               held_out_pct(family, sweeps));
    const auto kept = fitted_batch_curve(family);
    if (!kept || kept->family != family) {
      ADD_FAILURE() << "no shipped curve of " << family;
      continue;
    }
    EXPECT_NEAR(kept->power_half_batch, fit.power_half_batch, 1e-4 * (1 + fit.power_half_batch));
    EXPECT_NEAR(kept->time_half_batch, fit.time_half_batch, 1e-4 * (1 + fit.time_half_batch));
    EXPECT_NEAR(kept->full_share, fit.full_share, 1e-4);
    EXPECT_EQ(kept->ref_rate_tflops, fit.ref_rate_tflops);
  }
}

// The held-out error shipped with each curve is what fitting on all but one of its sweeps and
// scoring on that one gives, the largest over the sweeps (for a family of the two Zeus tables:
// one table's fit scored on the other, both ways; of the H200's: one precision's on the other).
TEST(BatchModel, TheHeldOutErrorsAreEachSweepLeftOut) {
  for (const auto& [family, sweeps] : every_sweep()) {
    SCOPED_TRACE(family);
    EXPECT_NEAR(fitted_batch_curve(family)->held_out_power_pct, held_out_pct(family, sweeps), 0.1);
  }
}

// n is each table's own choice: the least summed in-sample error over its families.
TEST(BatchModel, TheExponentIsEachTablesChoice) {
  for (const auto& table : {v100(), rtx6000()}) {
    auto summed_pct = [&](double n) {
      double sum = 0;
      for (const auto& [family, sweep] : table)
        sum += one_shot_power_mape_pct(fit_batch_curve(family, {sweep}, n), sweep, n);
      return sum;
    };
    const double chosen = summed_pct(kPowerBatchExponent);
    for (double n : {1.0, 1.25, 1.5, 2.0, 2.25, 2.5, 2.75, 3.0})
      EXPECT_LT(chosen, summed_pct(n)) << n;
  }
}

// The form it replaced: the example's excess over static power scaled by s(b) / s(b_ref), with h
// the same on every card, each point in turn the example of the others.
double held_h_mape_pct(double h, const BatchSweep& sw) {
  auto s = [&](double b) { return h <= 0 ? 1.0 : 1 / (1 + std::pow(h / b, kPowerBatchExponent)); };
  double sum = 0;
  int n = 0;
  for (const auto& e : sw.points)
    for (const auto& q : sw.points) {
      if (&e == &q) continue;
      const double p_W =
          std::clamp(sw.static_W + (e.avg_power_W - sw.static_W) * s(q.batch) / s(e.batch),
                     sw.static_W, sw.cap_W);
      sum += std::abs(p_W - q.avg_power_W) / q.avg_power_W * 100;
      ++n;
    }
  return sum / n;
}
double held_h_fit(const BatchSweep& sw) {
  double best_h = 0, best_pct = held_h_mape_pct(0, sw);
  for (int i = 0; i < 56; ++i)
    if (const double pct = held_h_mape_pct(std::pow(2.0, i / 4.0), sw); pct < best_pct)
      best_pct = pct, best_h = std::pow(2.0, i / 4.0);
  return best_h;
}

// The form fitted on one table and scored per family on the other, in both directions, against
// a flat curve and against the form it replaced.
TEST(BatchModel, HoldsOutBothWays) {
  const auto a = v100(), b = rtx6000();
  for (const auto& [fit_on, score_on, fitted, scored] :
       {std::tuple{"V100", "RTX6000", &a, &b}, std::tuple{"RTX6000", "V100", &b, &a}}) {
    for (const auto& [family, sweep] : *fitted) {
      const BatchCurve c = fit_batch_curve(family, {sweep});
      const BatchSweep& held = scored->at(family);
      const double pct = one_shot_power_mape_pct(c, held);
      const double fit_pct = one_shot_power_mape_pct(c, sweep);
      const double flat_pct = one_shot_power_mape_pct(BatchCurve{}, held);
      const double replaced_pct = held_h_mape_pct(held_h_fit(sweep), held);
      fmt::print(
          "fit {:<7} score {:<7} {:<18} h0 {:6.1f} f {:.2f}  fitted {:5.1f}%  held out "
          "{:5.1f}% (flat {:5.1f}%, h held {:5.1f}%)  epoch time {:5.1f}%\n",
          fit_on, score_on, family, c.power_half_batch, c.full_share, fit_pct, pct, flat_pct,
          replaced_pct, one_shot_time_mape_pct(c, held.points));
      // Measured: 12.6% (V100 -> RTX 6000) and 11.9% (RTX 6000 -> V100) for shufflenetv2, where
      // the curve held at h0 on every card left 18.6% both ways; 11.2% or less for the others
      // (deepspeech2 V100 -> RTX 6000 10.3%, 0.15 point over the curve held at h0: its half fill,
      // bs1, scaled by the cards' rates).
      EXPECT_LT(pct, family == "shufflenetv2" ? 13.0 : 11.5) << fit_on << " " << family;
      EXPECT_LT(pct, flat_pct + 1.0) << fit_on << " " << family;
      EXPECT_LE(pct, replaced_pct + 0.2) << fit_on << " " << family;
    }
  }
}

// The curve for a family no table sweeps, chosen the same way: pooled over one table's families
// and scored on the other's, both ways. Pooled on either, it is flat.
TEST(BatchModel, ThePooledCurveIsFlatOnEitherTable) {
  for (const auto& table : {v100(), rtx6000()}) {
    std::vector<BatchSweep> all;
    for (const auto& [family, sweep] : table) all.push_back(sweep);
    const BatchCurve pooled = fit_batch_curve("", all);
    EXPECT_EQ(pooled.power_half_batch, 0);
  }
}

// The default curve, for a family no table sweeps, is the pool of every family's sweeps. Each
// family left out of the pool in turn and scored on its own sweeps: the pool beats a flat curve
// summed over the ten families and for every H200 family (where power rises with the batch), and
// the median of the ten is the default's held-out figure (the worst, ShuffleNetV2's 72%, is a
// family that needs its own curve; flat leaves it 79.5%).
TEST(BatchModel, TheDefaultIsThePoolOfEverySweep) {
  const auto all = every_sweep();
  std::vector<BatchSweep> every;
  for (const auto& [family, sweeps] : all) every.insert(every.end(), sweeps.begin(), sweeps.end());
  const BatchCurve pooled = fit_batch_curve("", every);
  const BatchCurve shipped = default_batch_curve();
  EXPECT_NEAR(shipped.power_half_batch, pooled.power_half_batch, 1e-4);
  EXPECT_NEAR(shipped.full_share, pooled.full_share, 1e-4);
  EXPECT_EQ(shipped.ref_rate_tflops, pooled.ref_rate_tflops);
  std::vector<double> held_pct;
  double held_sum = 0, flat_sum = 0;
  const auto h200 = h200_sweeps();
  for (const auto& [family, sweeps] : all) {
    std::vector<BatchSweep> rest;
    for (const auto& [other, s] : all)
      if (other != family) rest.insert(rest.end(), s.begin(), s.end());
    const BatchCurve c = fit_batch_curve("", rest);
    double held = 0, flat = 0;
    for (const auto& sw : sweeps) {
      held += one_shot_power_mape_pct(c, sw) / static_cast<double>(sweeps.size());
      flat += one_shot_power_mape_pct(BatchCurve{}, sw) / static_cast<double>(sweeps.size());
    }
    fmt::print("{:<18} left out of the pool: {:5.1f}% (flat {:5.1f}%)\n", family, held, flat);
    held_pct.push_back(held);
    held_sum += held;
    flat_sum += flat;
    if (h200.count(family)) {
      EXPECT_LT(held, flat) << family;
    }
  }
  // Measured: 211.1 points summed against flat's 333.9; the pool beats flat for 7 of 10 (not
  // BERT 6.5% against 3.1%, DeepSpeech2 15.2% against 10.4%, NCF 21.3% against 5.4%).
  fmt::print("summed: pool {:.1f}, flat {:.1f}\n", held_sum, flat_sum);
  EXPECT_LT(held_sum, flat_sum);
  std::sort(held_pct.begin(), held_pct.end());
  ASSERT_EQ(held_pct.size(), 10u);
  EXPECT_NEAR(shipped.held_out_power_pct, (held_pct[4] + held_pct[5]) / 2, 0.1);
}

// A one-shot predictor (the nameplate's unless said) as `predict eval --by-family --examples
// all` runs it.
std::vector<EvalRow> one_shot_by_family(const std::vector<MeasuredCase>& cases,
                                        std::unique_ptr<Predictor> p = one_shot(spec_baseline())) {
  EvalOptions o;
  o.by_family = true;
  o.examples = ExampleMode::All;
  return evaluate(*p, cases, o);
}

// The rows' power MAPEs, ascending.
std::vector<double> sorted_mape_pct(const std::vector<EvalRow>& rows) {
  std::vector<double> mape;
  for (const auto& r : rows) {
    EXPECT_TRUE(r.mape_power_pct) << r.group;
    mape.push_back(r.mape_power_pct.value_or(1e9));
  }
  std::sort(mape.begin(), mape.end());
  return mape;
}

// On both tables, which the shipped curves were fitted on.
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
    EXPECT_LT(*r.mape_power_pct, 15.0) << r.gpu << " " << r.group;
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

// The corpus fills a card's SMs from a few images (its profiles' SMs in proportion to the batch's
// pixels), so its power is nearly flat in the batch; the real H200 sweep is not (ResNet-50 bf16:
// 212 W at bs16, 485 W at bs256). The curves fitted on that sweep, and the pooled curve that
// families without a sweep take, carry the real rise onto the corpus's cards, where the corpus
// has none: there they do worse than a flat curve. Both figures are kept in docs/predict.md; this
// pins the corpus's.
TEST(BatchModel, HoldsOnASimulatedCorpus) {
  const auto cases = batch_corpus();
  const auto rows = one_shot_by_family(cases);
  ASSERT_EQ(rows.size(), 40u);
  double worst = 0;
  size_t over = 0, worse_than_flat = 0;
  for (const auto& r : rows) {
    ASSERT_TRUE(r.mape_power_pct);
    // What a flat curve would score on the same group.
    std::vector<BatchPoint> points;
    for (const auto& c : cases)
      if (c.gpu == r.gpu && parse_workload(c.workload).model == r.group)
        points.push_back(
            {static_cast<double>(*parse_workload(c.workload).batch), c.avg_power_W, 0, "", ""});
    const twin::GpuSpec spec = twin::load_gpu_spec(r.gpu);
    const double flat_pct = one_shot_power_mape_pct(
        BatchCurve{}, {points, spec.static_power_W(), spec.default_limit_W});
    fmt::print("corpus {:<5} {:<15} {:5.1f}% (flat: {:5.1f}%)\n", r.gpu, r.group, *r.mape_power_pct,
               flat_pct);
    if (*r.mape_power_pct > flat_pct + 1.0) ++worse_than_flat;
    worst = std::max(worst, *r.mape_power_pct);
    if (*r.mape_power_pct > 15) ++over;
  }
  fmt::print("corpus: worst {:.1f}%, {} of {} GPU x family over 15%, {} worse than flat\n", worst,
             over, rows.size(), worse_than_flat);
  // Measured: worst 64.0% (resnet18_cifar on the H200, which takes the pooled curve), 13 of 40
  // over 15%, 19 more than a point worse than flat (every one a family whose curve the H200
  // sweep gave, or the pooled curve on the A100, H100 or H200). Before the H200 curves: worst
  // 23.8% (resnet50 on the H200), 4 of 40 over 15%.
  EXPECT_LT(worst, 65.0);
  EXPECT_LE(over, 13u);
  EXPECT_LE(worse_than_flat, 19u);
}

// On a real card the tables here do not hold: an H200's batch sweep of six families in two
// precisions (tests/data/batch_sweeps). Its curves were fitted on it, so this is in sample; the
// held-out figure of each curve (TheHeldOutErrorsAreEachSweepLeftOut) is the one that leaves a
// precision out.
TEST(BatchModel, OneShotOnARealH200BatchSweep) {
  const auto rows = one_shot_by_family(cases_from_table(h200_table(), "H200"));
  ASSERT_EQ(rows.size(), 6u);
  std::vector<double> mape;
  size_t over = 0;
  for (const auto& r : rows) {
    ASSERT_TRUE(r.mape_power_pct);
    fmt::print("H200 {:<14} {:5.1f}%\n", r.group, *r.mape_power_pct);
    mape.push_back(*r.mape_power_pct);
    if (*r.mape_power_pct > 15) ++over;
  }
  std::sort(mape.begin(), mape.end());
  const double median = (mape[2] + mape[3]) / 2;
  fmt::print("H200: median {:.1f}%, worst {:.1f}%, {} of 6 over 15%\n", median, mape.back(), over);
  // Measured (spec-baseline:one-shot): median 9.5%, worst 16.2% (densenet121), 1 of 6 over 15%.
  // With the curves of the Zeus tables alone (no H200 curve, none scaled by the card's rate):
  // median 37.7%, worst 66.1%, 5 of 6 over.
  EXPECT_LT(median, 10.0);
  EXPECT_LT(mape.back(), 17.0);
  EXPECT_LE(over, 1u);

  // The twin's one-shot multiplies by the twin's ratio between two precisions at its profile's
  // batch. Measured: median 8.7%, worst 17.1% (densenet121); taken at the query's batch, where
  // the curve had already moved the fill by the rates, it was median 12.6%, worst 27.3%.
  const std::vector<double> twin_mape = sorted_mape_pct(
      one_shot_by_family(cases_from_table(h200_table(), "H200"), one_shot(twin_predictor())));
  ASSERT_EQ(twin_mape.size(), 6u);
  EXPECT_LT((twin_mape[2] + twin_mape[3]) / 2, 9.5);
  EXPECT_LT(twin_mape.back(), 18.0);
}

Prediction ask(Predictor& p, const std::string& gpu, const std::string& workload) {
  return p.predict({gpu, parse_workload(workload), std::nullopt});
}

PredictQuery with_example(const std::string& gpu, const std::string& workload,
                          const std::string& example, double example_W) {
  return {gpu, parse_workload(workload),
          Example{parse_workload(example), example_W, std::nullopt, std::nullopt}};
}

// The one-shot's median and worst power error over the six families of an H100 batch sweep table
// (every row in turn the example of the others), each below its bound: (name, twin-based?,
// median below, worst below).
void expect_one_shot_on_h100(
    const std::string& file,
    std::initializer_list<std::tuple<const char*, bool, double, double>> bounds) {
  const SweepTable t = read_sweep_table(std::string(REGIME_TEST_DATA_DIR) + "/" + file);
  for (const auto& [name, twin_based, median_below, worst_below] : bounds) {
    const std::vector<double> mape = sorted_mape_pct(one_shot_by_family(
        cases_from_table(t, "H100"), one_shot(twin_based ? twin_predictor() : spec_baseline())));
    ASSERT_EQ(mape.size(), 6u);
    const double median = (mape[2] + mape[3]) / 2;
    fmt::print("{} {}: median {:.1f}%, worst {:.1f}%\n", file, name, median, mape.back());
    EXPECT_LT(median, median_below) << name;
    EXPECT_LT(mape.back(), worst_below) << name;
  }
}

// Held out from the batch curves: a card (an H100) none was fitted on, batches between the H200's,
// and plain fp32, a precision none was (tests/data/batch_sweeps/h100_heldout.sweep.csv). The fp32
// rate (kTensorShareOfClockBoundWork) was fitted on the same card at the H200's batches.
// Measured: spec-baseline:one-shot median 6.9%, worst 12.3% (mobilenet_v2), none over 15%;
// twin:one-shot 5.5%, 9.9% (mobilenet_v2). With fp32 at the data sheet's rate alone: 7.7%, 12.4%
// and 8.1%, 16.7% (densenet121). With the Zeus tables' curves alone: 14.3%, 31.4% and 12.8%, 24.7%.
TEST(BatchModel, OneShotOnAHeldOutH100Sweep) {
  expect_one_shot_on_h100(
      "batch_sweeps/h100_heldout.sweep.csv",
      {{"spec-baseline:one-shot", false, 8.5, 13.0}, {"twin:one-shot", true, 7.0, 12.0}});
}

// The sweep the fp32 rate was fitted on: fp32 beside TF32 on a real H100 at the H200 table's
// batches (tests/data/batch_sweeps/h100_fp32fit.sweep.csv), in sample for that one constant.
// Measured: spec-baseline:one-shot median 8.4%, worst 13.7% (densenet121); twin:one-shot 7.3%,
// 12.1% (mobilenet_v2). With fp32 at the data sheet's rate alone: 10.8%, 23.8% and 11.0%, 27.6%
// (both densenet121).
TEST(BatchModel, OneShotOnTheH100Fp32FitSweep) {
  expect_one_shot_on_h100(
      "batch_sweeps/h100_fp32fit.sweep.csv",
      {{"spec-baseline:one-shot", false, 9.5, 15.0}, {"twin:one-shot", true, 8.5, 13.5}});
  // Where the data sheet alone took fp32 for a 15th of bf16, the fitted rate is a third.
  const auto h100 = precision_rates("fp32", twin::load_gpu_spec("h100"));
  ASSERT_TRUE(h100);
  EXPECT_GT(h100->compute_rate, 0.3);
  EXPECT_LT(h100->compute_rate, 0.5);
}

// The twin tells a small batch from a large one and bf16 from tf32 on a card it fills late.
TEST(BatchModel, TheTwinMovesWithBatchAndPrecisionOnAnH200) {
  auto twin = twin_predictor();
  const double bs16 = *ask(*twin, "h200", "resnet50 bs16 bf16").avg_power_W;
  const double bs256 = *ask(*twin, "h200", "resnet50 bs256 bf16").avg_power_W;
  const double bs16_tf32 = *ask(*twin, "h200", "resnet50 bs16 tf32").avg_power_W;
  // Measured on the H200: 212 W, 485 W and 312 W.
  EXPECT_LT(bs16, 0.7 * bs256);
  EXPECT_GT(bs16_tf32, bs16 * 1.1);
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
  // Per sample, the small fp32 batch costs more time and energy than the large fp16 one.
  EXPECT_GT(*small.time_per_step_s / 8, 4 * *large.time_per_step_s / 64);
  EXPECT_GT(*small.energy_per_step_J / 8, 4 * *large.energy_per_step_J / 64);
  EXPECT_THAT(small.note, HasSubstr("precision fp32 for the profile's bf16"));
  EXPECT_THAT(small.note, HasSubstr("from the profile's bs256 to bs8"));
  EXPECT_THAT(large.note, Not(HasSubstr("precision")));
  // A family no table here sweeps: power along the pooled curve, step time with the batch.
  const Prediction c8 = ask(*twin, "h200", "resnet18_cifar bs8");
  const Prediction c512 = ask(*twin, "h200", "resnet18_cifar bs512");
  EXPECT_LT(*c8.avg_power_W, *c512.avg_power_W);
  EXPECT_GT(*c512.time_per_step_s, 4 * *c8.time_per_step_s);
  EXPECT_THAT(c8.note, HasSubstr("no batch sweep of this family here"));
  EXPECT_THAT(ask(*twin, "h200", "resnet50 int8 bs64").note,
              HasSubstr("precision int8 not modelled"));
  EXPECT_THAT(ask(*twin, "h200", "gemm bs64").note, HasSubstr("batch 64 not modelled"));
}

// fp32 and TF32 from each card's own data-sheet rates: fp32 at 1/16 of the 16-bit tensor rate on
// the A100 against 1/8 on the V100 for the tensor-core share of the work, and TF32 only where the
// card has it.
TEST(BatchModel, PrecisionRatesComeFromTheCardsDataSheet) {
  const twin::GpuSpec a100 = twin::load_gpu_spec("a100"), v100 = twin::load_gpu_spec("v100");
  const auto a100_fp32 = precision_rates("fp32", a100), v100_fp32 = precision_rates("fp32", v100);
  ASSERT_TRUE(a100_fp32 && v100_fp32);
  const double s = kTensorShareOfClockBoundWork;
  EXPECT_NEAR(a100_fp32->compute_rate, 1 / (1 - s + s * 312 / 19.5), 1e-12);
  EXPECT_NEAR(v100_fp32->compute_rate, 1 / (1 - s + s * 112 / 14.0), 1e-12);
  EXPECT_THAT(a100_fp32->basis, HasSubstr("fp32 at 19.5 of 312 TFLOPS (A100 data sheet)"));
  EXPECT_THAT(a100_fp32->basis, HasSubstr("15% of a 16-bit step's clock-bound work is "
                                          "tensor-core math that fp32 runs at that share"));
  EXPECT_DOUBLE_EQ(a100_fp32->bytes, 2);
  const auto a100_tf32 = precision_rates("tf32", a100);
  EXPECT_NEAR(a100_tf32->compute_rate, 0.5, 1e-12);
  EXPECT_THAT(a100_tf32->basis, HasSubstr("tf32 at 156 of 312 TFLOPS (A100 data sheet)"));
  const auto v100_tf32 = precision_rates("tf32", v100);
  EXPECT_DOUBLE_EQ(v100_tf32->compute_rate, v100_fp32->compute_rate);
  EXPECT_THAT(v100_tf32->basis, HasSubstr("tf32 runs as fp32 on v100: no TF32 tensor cores"));
  EXPECT_DOUBLE_EQ(precision_rates("bf16", a100)->compute_rate, 1);
  EXPECT_FALSE(precision_rates("int8", a100));
  // A spec file without the figures keeps the generic rates and says they are generic.
  twin::GpuSpec bare = v100;
  bare.fp32_tflops = 0;
  EXPECT_DOUBLE_EQ(precision_rates("fp32", bare)->compute_rate, 1 / (1 - s + s * 8));
  EXPECT_THAT(precision_rates("fp32", bare)->basis, HasSubstr("generic rate"));

  // Through the twin: fp32 slows a step more on the A100 than on the V100 ...
  auto twin = twin_predictor();
  const auto slowdown = [&](const std::string& gpu) {
    return *ask(*twin, gpu, "resnet50 bs64 fp32").time_per_step_s /
           *ask(*twin, gpu, "resnet50 bs64 fp16").time_per_step_s;
  };
  EXPECT_GT(slowdown("a100"), 1.3 * slowdown("v100"));
  // ... and TF32 on the V100 is its fp32, said so.
  const Prediction tf32 = ask(*twin, "v100", "resnet50 bs64 tf32");
  const Prediction fp32 = ask(*twin, "v100", "resnet50 bs64 fp32");
  EXPECT_DOUBLE_EQ(*tf32.time_per_step_s, *fp32.time_per_step_s);
  EXPECT_DOUBLE_EQ(*tf32.avg_power_W, *fp32.avg_power_W);
  EXPECT_THAT(tf32.note, HasSubstr("tf32 runs as fp32 on v100: no TF32 tensor cores"));
  EXPECT_LT(*ask(*twin, "a100", "resnet50 bs64 tf32").time_per_step_s,
            *ask(*twin, "a100", "resnet50 bs64 fp32").time_per_step_s);
}

TEST(BatchModel, OneShotMovesTheExampleAlongItsFamilysCurve) {
  auto p = one_shot(spec_baseline());
  PredictQuery q = with_example("v100", "cifar100/shufflenetv2/bs8/adam",
                                "cifar100/shufflenetv2/bs1024/adam", 195.0);
  const Prediction small = p->predict(q);
  ASSERT_TRUE(small.avg_power_W);
  // Measured 39 W; copying the example said 195 W.
  EXPECT_LT(*small.avg_power_W, 60);
  EXPECT_GT(*small.avg_power_W, twin::load_gpu_spec("v100").static_power_W());
  EXPECT_THAT(small.note, HasSubstr("scaled to bs8"));
  EXPECT_THAT(small.note, HasSubstr("the shufflenetv2 curve"));
  q.workload = parse_workload("cifar100/shufflenetv2/bs4096/adam");
  EXPECT_GT(*p->predict(q).avg_power_W, 190);
  // Another name of the family finds its curve too.
  q.workload = parse_workload("shufflenet_v2 bs8");
  EXPECT_LT(*p->predict(q).avg_power_W, 60);
  EXPECT_THAT(p->predict(q).note, HasSubstr("the shufflenetv2 curve"));
  // Another precision: the nameplate cannot tell them apart and says so.
  q.workload = parse_workload("cifar100/shufflenetv2/bs1024/adam fp32");
  EXPECT_THAT(p->predict(q).note, HasSubstr("does not tell them apart, assumed"));
  // The precision is a clause of its own after the curve's.
  EXPECT_THAT(p->predict(q).note, HasSubstr("); precision fp32 for the example's unsaid"));
}

// An example the curve cannot place, a half-fill batch in the thousands and a precision no
// predictor models each read as what they are.
TEST(BatchModel, OneShotNotesSayWhatTheCurveCouldNotDo) {
  auto p = one_shot(spec_baseline());
  const double static_W = twin::load_gpu_spec("v100").static_power_W();
  PredictQuery q{"v100", parse_workload("shufflenetv2 bs64"),
                 Example{parse_workload("shufflenetv2 bs1024"), 10.0, std::nullopt, std::nullopt}};
  const Prediction under = p->predict(q);
  EXPECT_DOUBLE_EQ(*under.avg_power_W, static_W);
  EXPECT_THAT(under.note, HasSubstr("at or under the card's static power"));
  EXPECT_THAT(under.note, Not(HasSubstr("bs0")));
  // 0.5 W over static power at bs1024 places the half fill beyond bs1000.
  q.example->avg_power_W = static_W + 0.5;
  const CurvePlace far =
      place_on_curve(*fitted_batch_curve("shufflenetv2"), static_W, 250, static_W + 0.5, 1024);
  ASSERT_GT(far.half_batch, 1000);
  EXPECT_THAT(p->predict(q).note,
              HasSubstr(fmt::format("half-filled at bs{:.0f} here", far.half_batch)));
  EXPECT_THAT(p->predict(q).note, Not(HasSubstr("e+")));

  // int8 has no rate: the twin's ratio between int8 (read as its profile's bf16) and fp32 would
  // be a guess, so the two are taken alike and the note says why.
  auto twin = one_shot(twin_predictor());
  PredictQuery r{"v100", parse_workload("resnet50 bs64 int8"),
                 Example{parse_workload("resnet50 bs128 fp32"), 222.4, std::nullopt, std::nullopt}};
  const Prediction int8 = twin->predict(r);
  r.workload = parse_workload("resnet50 bs64 fp32");
  const Prediction same = twin->predict(r);
  EXPECT_DOUBLE_EQ(*int8.avg_power_W, *same.avg_power_W);
  EXPECT_THAT(int8.note, HasSubstr("int8 not modelled, the two assumed alike"));
  EXPECT_THAT(int8.note, Not(HasSubstr("does not tell them apart")));
  // A modelled pair keeps the twin's ratio.
  r.workload = parse_workload("resnet50 bs64 fp16");
  EXPECT_THAT(twin->predict(r).note, HasSubstr("(the twin's ratio)"));
  EXPECT_NE(*twin->predict(r).avg_power_W, *same.avg_power_W);
}

// A power moved along a family's curve is as uncertain as the curve is held out, combined with the
// base's own interval root-sum-square; one the curve left where it was keeps the base's interval.
TEST(BatchModel, APowerMovedAlongACurveCarriesItsHeldOutError) {
  const double shuffle_rel = fitted_batch_curve("shufflenetv2")->held_out_power_pct / 100;
  auto nameplate = one_shot(spec_baseline());
  PredictQuery q = with_example("v100", "cifar100/shufflenetv2/bs8/adam",
                                "cifar100/shufflenetv2/bs1024/adam", 195.0);
  const Prediction moved = nameplate->predict(q);
  ASSERT_TRUE(moved.power_half_width_rel);
  EXPECT_DOUBLE_EQ(*moved.power_half_width_rel, shuffle_rel);
  EXPECT_THAT(moved.note,
              HasSubstr(fmt::format("; power +-{:.0f}%: the shufflenetv2 curve's {:.1f}% held out",
                                    100 * shuffle_rel, 100 * shuffle_rel)));
  q.workload = q.example->workload;  // the example's own batch: nothing moved
  EXPECT_FALSE(nameplate->predict(q).power_half_width_rel);
  EXPECT_THAT(nameplate->predict(q).note, Not(HasSubstr("held out")));
  // A flat curve that lifts an example under the card's static power changes the answer too.
  const Prediction lifted = nameplate->predict(
      with_example("rtx6000", "movielens-1m/ncf/bs16384/adam", "movielens-1m/ncf/bs4/adam", 55.0));
  ASSERT_TRUE(lifted.power_half_width_rel);
  EXPECT_DOUBLE_EQ(*lifted.power_half_width_rel,
                   fitted_batch_curve("ncf")->held_out_power_pct / 100);

  auto twin = twin_predictor();
  // BERT runs on the twin's transformer profile (bs32) and has a rising curve.
  const Prediction own = ask(*twin, "v100", "bert bs32");
  const Prediction bert8 = ask(*twin, "v100", "bert bs8");
  ASSERT_TRUE(own.power_half_width_rel && bert8.power_half_width_rel);
  EXPECT_NEAR(
      *bert8.power_half_width_rel,
      std::hypot(*own.power_half_width_rel, fitted_batch_curve("bert")->held_out_power_pct / 100),
      1e-12);
  EXPECT_GT(*bert8.power_half_width_rel, *own.power_half_width_rel);
  EXPECT_THAT(bert8.note, HasSubstr("the bert_base_uncased curve's 3.4% held out"));
  EXPECT_THAT(bert8.note, HasSubstr("root-sum-square"));
  EXPECT_THAT(own.note, Not(HasSubstr("held out")));
  // ResNet-50 fills a V100 by bs8 (half-filled at bs3.4 on its 112 TFLOPS): bs64 keeps the
  // profile's power within 1%, yet it was moved along the curve, so it carries the curve's error.
  const Prediction r64 = ask(*twin, "v100", "resnet50 bs64");
  EXPECT_NEAR(*r64.avg_power_W, *ask(*twin, "v100", "resnet50").avg_power_W,
              0.01 * *r64.avg_power_W);
  EXPECT_THAT(r64.note, HasSubstr("the resnet50 curve's 21.5% held out"));
  // No table sweeps ResNet-18 on CIFAR: moved along the pooled curve and widened by its figure.
  const Prediction c8 = ask(*twin, "h200", "resnet18_cifar bs8");
  EXPECT_GT(*c8.power_half_width_rel, *ask(*twin, "h200", "resnet18_cifar").power_half_width_rel);
  EXPECT_THAT(c8.note, HasSubstr("the pooled curve's 15.1% held out"));
}

// How often the measured power lies within the widened interval, every workload in turn the
// example of the others of its family on the same card. The curves were fitted on these tables
// and the widths are their held-out errors, so this is the in-sample side of it.
TEST(BatchModel, TheWidenedIntervalCoversMostMeasurementsOnTheTables) {
  auto nameplate = one_shot(spec_baseline());
  int all_n = 0, all_in = 0;
  for (const char* gpu : {"V100", "RTX6000"}) {
    const SweepTable t = zeus(gpu);
    const double static_W = twin::load_gpu_spec(gpu).static_power_W();
    std::map<std::string, std::vector<MeasuredCase>> by_family;
    for (const auto& c : cases_from_table(t, gpu))
      by_family[parse_workload(c.workload).model].push_back(c);
    for (const auto& [family, cases] : by_family) {
      int n = 0, in = 0, kept = 0;
      for (const auto& e : cases)
        for (const auto& c : cases) {
          if (&e == &c) continue;
          const Prediction p =
              nameplate->predict(with_example(gpu, c.workload, e.workload, e.avg_power_W));
          ASSERT_TRUE(p.avg_power_W);
          // Kept as the example (a flat curve, or the same batch): the nameplate has no interval.
          if (!p.power_half_width_rel) {
            EXPECT_DOUBLE_EQ(*p.avg_power_W, std::max(e.avg_power_W, static_W));
            ++kept;
            continue;
          }
          ++n;
          if (std::abs(*p.avg_power_W - c.avg_power_W) <= *p.power_half_width_rel * *p.avg_power_W)
            ++in;
        }
      fmt::print("{:<8} {:<18} within the interval {:3d} of {:3d} moved; {:3d} kept\n", gpu, family,
                 in, n, kept);
      all_n += n, all_in += in;
    }
  }
  fmt::print("all: {:.1f}% of {}\n", 100.0 * all_in / all_n, all_n);
  // Measured: 779 of 1096 (71.1%); a mean error as the width covers about two in three.
  EXPECT_GT(all_n, 1000);
  EXPECT_GE(100 * all_in, 65 * all_n);
}

TEST(BatchModel, AFamilyWithoutASweepTakesThePooledCurve) {
  const BatchCurve c = batch_curve_for(parse_workload("lstm bs64"));
  EXPECT_EQ(c.family, "");
  EXPECT_NEAR(c.power_half_batch, 3.36359, 1e-4);
  EXPECT_EQ(c.ref_rate_tflops, 112);
  // On a V100 the pooled curve is full by bs64 and a little under it at bs8.
  const double at8_W = power_at_batch_W(c, 36.5, 250, 120, 64, 8);
  EXPECT_LT(at8_W, 120);
  EXPECT_GT(at8_W, 0.75 * 120);
  // Step time from the fitted families' median per-step overhead (resnet50's, 33.4 samples).
  EXPECT_NEAR(step_time_ratio(c, 64, 8), (33.4035 + 8) / (33.4035 + 64), 1e-4);
  EXPECT_EQ(batch_curve_for(parse_workload("bert bs64")).family, "bert_base_uncased");
  EXPECT_EQ(batch_curve_for(parse_workload("vgg16 bs64"), "vgg16").family, "vgg16");
  EXPECT_EQ(batch_curve_for(parse_workload("resnet18 bs64"), "resnet18_cifar").family, "");
  EXPECT_FALSE(precision_rates("fp8"));
  EXPECT_LT(precision_rates("fp32")->compute_rate, precision_rates("tf32")->compute_rate);
}

TEST(BatchModel, TheKnownPointPlacesTheCurveOnTheCard) {
  const BatchCurve rising = *fitted_batch_curve("shufflenetv2");
  // A busy card draws its static power at least (a measurement under it is read as noise around
  // it: on the RTX 6000's NCF runs, 55-69 W against 67 W static, 8.0% against 9.8% copied).
  EXPECT_DOUBLE_EQ(power_at_batch_W(rising, 36.5, 250, 30, 8, 1024), 36.5);
  EXPECT_GT(power_at_batch_W(rising, 36.5, 250, 100, 64, 1024), 100);
  EXPECT_LE(power_at_batch_W(rising, 36.5, 250, 240, 64, 4096), 250);
  // A point at the family's full power leaves the half-fill batch where the tables put it.
  const double full_W = 36.5 + rising.full_share * (250 - 36.5);
  const CurvePlace at_full = place_on_curve(rising, 36.5, 250, full_W, 4096);
  EXPECT_NEAR(at_full.half_batch, rising.power_half_batch, 0.05 * rising.power_half_batch);
  // The same batch drawing less sits lower on the curve: the card fills later, so its half-fill
  // batch is larger, and a larger batch is predicted to draw more than the V100-like card would.
  const CurvePlace low = place_on_curve(rising, 67, 260, 83, 64);
  const CurvePlace high = place_on_curve(rising, 67, 260, 110, 64);
  EXPECT_GT(low.half_batch, high.half_batch);
  EXPECT_GT(low.half_batch, rising.power_half_batch);
  // The placed curve passes through the known point.
  EXPECT_NEAR(power_at_batch_W(rising, 67, 260, 83, 64, 64), 83, 1e-9);
  // Measured on the RTX 6000: 193 W at bs256, 83 W at bs64. The curve held at the tables' h0
  // rises too early from a low point; placed, it comes nearer (138 W against 113 W).
  auto s = [&](double b, double h) { return 1 / (1 + std::pow(h / b, kPowerBatchExponent)); };
  const double h0 = rising.power_half_batch;
  const double held_W = 67 + (83 - 67) * s(256, h0) / s(64, h0);
  const double placed_W = power_at_batch_W(rising, 67, 260, 83, 64, 256);
  EXPECT_GT(placed_W, held_W + 10);
  EXPECT_LT(placed_W, 193);
}

// The batch size and precision each profile was calibrated at are the profile's own, and the
// twin answers at them as it answers for the bare profile.
TEST(BatchModel, TheProfilesCarryTheirBatchAndPrecision) {
  const std::map<std::string, int> batch = {
      {"cnn5", 256},     {"densenet121", 128}, {"mobilenet_v2", 256}, {"resnet18_cifar", 128},
      {"resnet50", 256}, {"transformer", 32},  {"vgg16", 128},        {"vit_b_16", 128}};
  auto twin = twin_predictor();
  for (const auto& name : twin::sim_workload_names()) {
    SCOPED_TRACE(name);
    const twin::SimWorkloadProfile p = twin::sim_workload_profile(name);
    EXPECT_EQ(p.precision, name == "cnn5" ? "fp16" : "bf16");
    if (name == "gemm") {
      EXPECT_FALSE(p.batch);
      continue;
    }
    ASSERT_TRUE(p.batch);
    EXPECT_EQ(*p.batch, batch.at(name));
    const Prediction bare = ask(*twin, "h200", name);
    const Prediction own =
        ask(*twin, "h200", fmt::format("{} bs{} {}", name, *p.batch, p.precision));
    const Prediction other = ask(*twin, "h200", fmt::format("{} bs{}", name, *p.batch * 2));
    ASSERT_TRUE(bare.avg_power_W && own.avg_power_W && other.time_per_step_s);
    EXPECT_DOUBLE_EQ(*own.avg_power_W, *bare.avg_power_W);
    EXPECT_DOUBLE_EQ(*own.time_per_step_s, *bare.time_per_step_s);
    EXPECT_THAT(own.note,
                HasSubstr(fmt::format("at the profile's own batch size, bs{}", *p.batch)));
    EXPECT_THAT(bare.note,
                HasSubstr(fmt::format("batch size unsaid: the profile's bs{}", *p.batch)));
    EXPECT_GT(*other.time_per_step_s, *bare.time_per_step_s);
  }
}

}  // namespace
}  // namespace regime::predict
