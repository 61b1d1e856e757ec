#include "predict/batch_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "predict/eval.hpp"
#include "predict/workload.hpp"

namespace regime::predict {

namespace {

double fill_share(double batch, double half_batch, double exponent) {
  if (half_batch <= 0) return 1;
  const double b = std::pow(batch, exponent);
  return b / (b + std::pow(half_batch, exponent));
}

// Of the (A, h) through the known point, the nearest to (f * (limit - static), h0) in
// log(A / A0)^2 + log(h / h0)^2; h searched from h0 / 1024 to h0 * 1024 in steps of 2^(1/16).
// The two ratios weigh alike: a weight chosen on the two tables would no longer be held out.
CurvePlace place_with(const BatchCurve& c, double exponent, double static_W, double cap_W,
                      double ref_W, double ref_batch, double rate_tflops) {
  const double excess_W = ref_W - static_W;
  const double h0 = half_batch_at(c, rate_tflops);
  if (h0 <= 0 || excess_W <= 0) return {0, excess_W};
  CurvePlace best{h0, excess_W / fill_share(ref_batch, h0, exponent)};
  const double prior_W = c.full_share * (cap_W - static_W);
  if (!(prior_W > 0)) return best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (int j = -160; j <= 160; ++j) {
    const double h = h0 * std::exp2(j / 16.0);
    const double full_W = excess_W / fill_share(ref_batch, h, exponent);
    const double cost = std::pow(std::log(full_W / prior_W), 2) + std::pow(std::log(h / h0), 2);
    if (cost < best_cost) best_cost = cost, best = {h, full_W};
  }
  return best;
}

double power_from(const CurvePlace& at, double exponent, double static_W, double cap_W,
                  double batch) {
  const double p_W = static_W + at.full_excess_W * fill_share(batch, at.half_batch, exponent);
  // A busy card draws its static power at least: a measurement under it is noise around it.
  return std::clamp(p_W, std::min(static_W, cap_W), cap_W);
}

double power_mape_with(const BatchCurve& c, double exponent, const BatchSweep& sw) {
  const auto& pts = sw.points;
  double sum = 0;
  size_t n = 0;
  for (size_t e = 0; e < pts.size(); ++e) {
    const CurvePlace at = place_with(c, exponent, sw.static_W, sw.cap_W, pts[e].avg_power_W,
                                     pts[e].batch, sw.rate_tflops);
    for (size_t q = 0; q < pts.size(); ++q) {
      if (e == q) continue;
      const double p_W = power_from(at, exponent, sw.static_W, sw.cap_W, pts[q].batch);
      sum += std::abs(p_W - pts[q].avg_power_W) / pts[q].avg_power_W * 100;
      ++n;
    }
  }
  return n ? sum / static_cast<double>(n) : 0;
}

// k from T = A / b + B over one data set's epochs: T = N c (k / b + 1), so k = A / B.
double fit_time_half_batch(const std::vector<BatchPoint>& points) {
  std::map<std::string, size_t> count;
  for (const auto& p : points) ++count[p.dataset];
  const auto largest = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                         return a.second < b.second;
                       })->first;
  std::vector<std::pair<double, double>> xy;
  for (const auto& p : points)
    if (p.dataset == largest && p.time_s > 0) xy.emplace_back(1.0 / p.batch, p.time_s);
  if (xy.size() < 2) return 0;
  double mx = 0, my = 0;
  for (auto [x, y] : xy) mx += x, my += y;
  mx /= static_cast<double>(xy.size());
  my /= static_cast<double>(xy.size());
  double sxy = 0, sxx = 0;
  for (auto [x, y] : xy) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
  if (sxx <= 0) return 0;
  const double a = sxy / sxx, b = my - a * mx;
  return b > 0 ? std::max(0.0, a / b) : 0;
}

}  // namespace

std::map<std::string, std::vector<BatchPoint>> batch_points(const SweepTable& table) {
  std::map<std::string, std::vector<BatchPoint>> out;
  for (const std::string& name : table.workloads()) {
    const auto rows = table.rows_for(name);
    const WorkloadDesc w = parse_workload(name);
    if (!w.batch || w.model.empty() || rows.empty()) continue;
    const SweepRow& d = row_at_default(rows);
    const double batch = static_cast<double>(*w.batch);
    const double time_s = d.unit == "step" ? d.time_s / batch : d.time_s;
    out[w.model].push_back({batch, d.avg_power_W, time_s, w.dataset, w.precision});
  }
  return out;
}

namespace {
// A half-fill batch at one compute rate carried to another (kept where either is unknown).
double half_batch_between_rates(double half_batch, double from_rate_tflops, double to_rate_tflops) {
  if (!(from_rate_tflops > 0) || !(to_rate_tflops > 0)) return half_batch;
  return half_batch * to_rate_tflops / from_rate_tflops;
}
}  // namespace

double half_batch_at(const BatchCurve& curve, double rate_tflops) {
  return half_batch_between_rates(curve.power_half_batch, curve.ref_rate_tflops, rate_tflops);
}

double compute_rate_tflops(const twin::GpuSpec& spec, const std::string& precision) {
  const auto rates = precision_rates(precision, spec);
  return spec.peak_tflops * (rates ? rates->compute_rate : 1.0);
}

CurvePlace place_on_curve(const BatchCurve& curve, double static_W, double cap_W, double ref_W,
                          double ref_batch, double rate_tflops, double exponent) {
  return place_with(curve, exponent, static_W, cap_W, ref_W, ref_batch, rate_tflops);
}

CurvePlace at_rate(const CurvePlace& at, double from_rate_tflops, double to_rate_tflops) {
  return {half_batch_between_rates(at.half_batch, from_rate_tflops, to_rate_tflops),
          at.full_excess_W};
}

double power_on_curve_W(const CurvePlace& at, double static_W, double cap_W, double batch) {
  return power_from(at, kPowerBatchExponent, static_W, cap_W, batch);
}

double power_at_batch_W(const BatchCurve& curve, double static_W, double cap_W, double ref_W,
                        double ref_batch, double batch) {
  const CurvePlace at =
      place_with(curve, kPowerBatchExponent, static_W, cap_W, ref_W, ref_batch, 0);
  return power_on_curve_W(at, static_W, cap_W, batch);
}

double step_time_ratio(const BatchCurve& curve, double ref_batch, double batch) {
  return (curve.time_half_batch + batch) / (curve.time_half_batch + ref_batch);
}

double one_shot_power_mape_pct(const BatchCurve& curve, const BatchSweep& sweep, double exponent) {
  return power_mape_with(curve, exponent, sweep);
}

double one_shot_time_mape_pct(const BatchCurve& curve, const std::vector<BatchPoint>& points) {
  double sum = 0;
  size_t n = 0;
  for (size_t e = 0; e < points.size(); ++e)
    for (size_t q = 0; q < points.size(); ++q) {
      if (e == q || points[e].dataset != points[q].dataset) continue;
      // An epoch is samples / batch steps.
      const double t_s = points[e].time_s * points[e].batch / points[q].batch *
                         step_time_ratio(curve, points[e].batch, points[q].batch);
      sum += std::abs(t_s - points[q].time_s) / points[q].time_s * 100;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : 0;
}

BatchCurve fit_batch_curve(const std::string& family, const std::vector<BatchSweep>& sweeps,
                           double exponent) {
  BatchCurve best{family, 0, 0, "", 1};
  double share_sum = 0, k_sum = 0;
  size_t k_n = 0;
  for (const auto& sw : sweeps) {
    if (sw.points.empty() || !(sw.cap_W > sw.static_W)) continue;
    const double top_W = std::max_element(sw.points.begin(), sw.points.end(), [](auto& a, auto& b) {
                           return a.avg_power_W < b.avg_power_W;
                         })->avg_power_W;
    share_sum += std::clamp((top_W - sw.static_W) / (sw.cap_W - sw.static_W), 0.0, 1.0);
    k_sum += fit_time_half_batch(sw.points);
    ++k_n;
  }
  if (k_n == 0) return best;
  for (const auto& sw : sweeps)
    if (sw.rate_tflops > 0) {
      best.ref_rate_tflops = sw.rate_tflops;
      break;
    }
  best.full_share = share_sum / static_cast<double>(k_n);
  best.time_half_batch = k_sum / static_cast<double>(k_n);
  auto summed_pct = [&](const BatchCurve& c) {
    double sum = 0;
    for (const auto& sw : sweeps) sum += power_mape_with(c, exponent, sw);
    return sum;
  };
  double best_pct = summed_pct(best);
  for (int i = 0; i < 56; ++i) {
    BatchCurve c = best;
    c.power_half_batch = std::pow(2.0, i / 4.0);
    const double pct = summed_pct(c);
    if (pct < best_pct) best_pct = pct, best = c;
  }
  return best;
}

const std::vector<BatchCurve>& fitted_batch_curves() {
  // fit_batch_curve on each family's sweeps: tests/data/zeus/V100.sweep.csv (static power 36.5 W,
  // limit 250 W, 112 TFLOPS) and RTX6000.sweep.csv (67 W, 260 W, 130.5 TFLOPS), which say no
  // precision (16-bit rates), and tests/data/batch_sweeps/h200.sweep.csv (110 W, 700 W; bf16 at 989
  // TFLOPS, tf32 at 494.5), one sweep per precision. BatchModel.TheCurvesAreTheFitOfEveryTable
  // refits them, BatchModel.TheHeldOutErrorsAreEachSweepLeftOut their held-out errors.
  static const std::vector<BatchCurve> curves = {
      {"shufflenetv2", 107.635, 472.007,
       "the V100 and RTX 6000 tables' 30 shufflenetv2 runs, bs8-bs4096", 0.781573, 12.55, 112},
      {"resnet50", 3.36359, 33.4035,
       "the V100 and RTX 6000 tables' 15 resnet50 runs, bs8-bs360, and the H200's 6 (bf16, tf32), "
       "bs16-bs256",
       0.828536, 21.50, 112},
      {"deepspeech2", 1, 12.8919, "the V100 and RTX 6000 tables' 26 deepspeech2 runs, bs2-bs192",
       0.759592, 11.18, 112},
      {"ncf", 0, 11300.7, "the V100 and RTX 6000 tables' 26 ncf runs, bs4-bs16384", 0.0150090, 7.98,
       112},
      {"bert_base_uncased", 1, 0,
       "the V100 and RTX 6000 tables' 23 bert_base_uncased runs, bs4-bs128", 0.929794, 3.44, 112},
      {"densenet121", 53.8174, 180.555,
       "the H200 table's 6 densenet121 runs (bf16, tf32), bs16-bs256", 0.686517, 35.08, 989},
      {"mobilenet_v2", 32, 31.4758, "the H200 table's 6 mobilenet_v2 runs (bf16, tf32), bs32-bs512",
       0.505822, 20.85, 989},
      {"transformer", 6.72717, 12.3687,
       "the H200 table's 6 transformer runs (bf16, tf32), bs4-bs64", 0.98322, 13.02, 989},
      {"vgg16", 9.51366, 8.75828, "the H200 table's 6 vgg16 runs (bf16, tf32), bs16-bs256",
       0.966102, 10.23, 989},
      {"vit_b_16", 26.9087, 44.5139, "the H200 table's 6 vit_b_16 runs (bf16, tf32), bs16-bs256",
       0.977212, 3.25, 989},
  };
  return curves;
}

std::optional<BatchCurve> fitted_batch_curve(const std::string& family) {
  static const std::map<std::string, std::string> aliases = {
      {"bert", "bert_base_uncased"},
      {"bert-base", "bert_base_uncased"},
      {"bert-base-uncased", "bert_base_uncased"},
      {"resnet-50", "resnet50"},
      {"shufflenet_v2", "shufflenetv2"},
      {"shufflenet", "shufflenetv2"}};
  std::string f = family;
  if (auto it = aliases.find(f); it != aliases.end()) f = it->second;
  for (const auto& c : fitted_batch_curves())
    if (c.family == f) return c;
  return std::nullopt;
}

// The pooled curve's one-shot power error on a family left out of the pool, the median over the
// ten families (BatchModel.TheDefaultIsThePoolOfEverySweep recomputes it; the worst is 72%).
constexpr double kPooledHeldOutPowerPct = 15.05;

BatchCurve default_batch_curve() {
  std::vector<double> k;
  for (const auto& c : fitted_batch_curves()) k.push_back(c.time_half_batch);
  std::sort(k.begin(), k.end());
  return {"",
          3.36359,
          k[k.size() / 2],
          "no batch sweep of this family here: the curve pooled over the ten families swept "
          "(the V100, RTX 6000 and H200 tables)",
          0.751083,
          kPooledHeldOutPowerPct,
          112};
}

BatchCurve batch_curve_for(const WorkloadDesc& w, const std::string& profile) {
  if (auto c = fitted_batch_curve(w.model)) return *c;
  if (auto c = fitted_batch_curve(profile)) return *c;
  return default_batch_curve();
}

namespace {
// fp32's rate as a training step runs it: the tensor-core share of the 16-bit step's clock-bound
// work at the data sheet's fp32 share of the tensor rate, the rest as fast as in 16 bits; never
// faster than TF32, fp32's own tensor-core shortcut, where the card or the generic rates have it.
double fp32_achieved_rate(double sheet_share, double tf32_share) {
  const double s = kTensorShareOfClockBoundWork;
  const double rate = 1 / ((1 - s) + s / sheet_share);
  return tf32_share > 0 ? std::min(rate, tf32_share) : rate;
}
std::string fp32_achieved_words(double rate) {
  return fmt::format(
      "; {:.0f}% of a 16-bit step's clock-bound work is tensor-core math that "
      "fp32 runs at that share, the rest runs alike: {:.2f} of the 16-bit rate "
      "(fitted on a real H100 fp32 sweep)",
      100 * kTensorShareOfClockBoundWork, rate);
}

// No card's figures: TF32 at half the 16-bit tensor rate (A100 data sheet), fp32 at 1/8 (V100,
// T4, RTX 6000 data sheets).
constexpr double kGenericTf32Share = 0.5;
constexpr double kGenericFp32SheetShare = 0.125;
}  // namespace

std::optional<PrecisionRates> precision_rates(const std::string& precision) {
  if (precision.empty() || precision == "fp16" || precision == "bf16" || precision == "amp" ||
      precision == "mixed")
    return PrecisionRates{1, 1, "16-bit, as the twin's profiles"};
  if (precision == "tf32")
    return PrecisionRates{kGenericTf32Share, 2,
                          "generic rate, no card's figures: TF32 at half the 16-bit tensor rate "
                          "(A100 data sheet), twice the bytes"};
  if (precision == "fp32") {
    const double rate = fp32_achieved_rate(kGenericFp32SheetShare, kGenericTf32Share);
    return PrecisionRates{rate, 2,
                          fmt::format("generic rate, no card's figures: fp32 at 1/8 of the 16-bit "
                                      "tensor rate (V100, T4, RTX 6000 data sheets){}, twice the "
                                      "bytes",
                                      fp32_achieved_words(rate))};
  }
  return std::nullopt;
}

std::optional<PrecisionRates> precision_rates(const std::string& precision,
                                              const twin::GpuSpec& spec) {
  auto generic = precision_rates(precision);
  if (!generic || generic->compute_rate == 1) return generic;
  if (!(spec.fp32_tflops > 0)) {
    generic->basis =
        fmt::format("no fp32 figure in the {} spec file: {}", spec.model, generic->basis);
    return generic;
  }
  std::string sheet = spec.model;
  std::transform(sheet.begin(), sheet.end(), sheet.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  sheet += " data sheet";
  if (precision == "tf32" && spec.tf32_tflops)
    return PrecisionRates{*spec.tf32_tflops / spec.peak_tflops, 2,
                          fmt::format("tf32 at {:g} of {:g} TFLOPS ({}), twice the bytes",
                                      *spec.tf32_tflops, spec.peak_tflops, sheet)};
  const std::string as_fp32 =
      precision == "tf32"
          ? fmt::format("tf32 runs as fp32 on {}: no TF32 tensor cores; ", spec.model)
          : "";
  const double rate =
      fp32_achieved_rate(spec.fp32_tflops / spec.peak_tflops,
                         spec.tf32_tflops ? *spec.tf32_tflops / spec.peak_tflops : 0);
  return PrecisionRates{
      rate, 2,
      fmt::format("{}fp32 at {:g} of {:g} TFLOPS ({}){}, twice the bytes", as_fp32,
                  spec.fp32_tflops, spec.peak_tflops, sheet, fp32_achieved_words(rate))};
}

}  // namespace regime::predict
