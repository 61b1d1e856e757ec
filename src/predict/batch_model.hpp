#pragma once
// Batch size and precision in the first guess. A model family's power against its batch size on
// one GPU, anchored at one known point (a measured example or the twin's profile):
//   P(b) = P_static + (P(b_ref) - P_static) * s(b) / s(b_ref),   s(b) = b^n / (b^n + h^n)
// P_static is the spec's static power (what a busy card draws while it waits: a tiny batch
// leaves it there), h the batch at which the family fills half of what it will (0: power does not
// change with the batch), n one exponent for all families. Step time grows with the batch past a
// per-step overhead worth k samples: t(b) = t(b_ref) * (k + b) / (k + b_ref).
// h and k are fitted per family on the batch sweeps of one table (the V100's, Zeus), checked on
// the other (RTX 6000) and on a simulated corpus (docs/predict.md, "Batch size and precision").
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "predict/workload.hpp"
#include "trace/sweep_table.hpp"

namespace regime::predict {

struct BatchCurve {
  std::string family;           // the model token it was fitted on; empty for the default
  double power_half_batch = 0;  // h; 0: flat
  double time_half_batch = 0;   // k
  std::string basis;            // what it was fitted on, for the predictors' notes
};

// n, chosen with the curves on the V100 table (the least summed one-shot error over its
// families among 1, 1.25, ..., 3).
inline constexpr double kPowerBatchExponent = 1.75;

// One workload of a family on one GPU at the default limit.
struct BatchPoint {
  double batch = 0;
  double avg_power_W = 0;
  double time_s = 0;    // per unit of work of the table (an epoch: a fixed number of samples)
  std::string dataset;  // epochs of different data sets are not comparable in time
};

// The families of a sweep table (the workload's model token) and their points at each
// workload's highest cap; workloads without a batch size are left out.
std::map<std::string, std::vector<BatchPoint>> batch_points(const SweepTable& table);

// Power at `batch` from a known `ref_W` at `ref_batch`, kept within [static_W, cap_W].
double power_at_batch_W(const BatchCurve& curve, double static_W, double cap_W, double ref_W,
                        double ref_batch, double batch);
// Step time at `batch` over step time at `ref_batch`.
double step_time_ratio(const BatchCurve& curve, double ref_batch, double batch);

// The mean absolute percentage error of the power when each point in turn is the example of the
// others (what `predict eval --by-family --examples all` scores).
double one_shot_power_mape_pct(const BatchCurve& curve, const std::vector<BatchPoint>& points,
                               double static_W, double cap_W,
                               double exponent = kPowerBatchExponent);
// The same for the time of a unit of work (an epoch: samples / batch steps), within each data set.
double one_shot_time_mape_pct(const BatchCurve& curve, const std::vector<BatchPoint>& points);

// h by the least one-shot power error over 0 and 2^(i/4), i = 0..55; k by least squares of the
// epoch time against 1 / batch over the family's largest data set (T = N c (k / b + 1)).
BatchCurve fit_batch_curve(const std::string& family, const std::vector<BatchPoint>& points,
                           double static_W, double cap_W, double exponent = kPowerBatchExponent);

// The curves fitted on tests/data/zeus/V100.sweep.csv (a unit test refits them from it), by the
// family's model token and its aliases (bert -> bert_base_uncased, transformer ->
// bert_base_uncased). nullopt for a family no table here sweeps.
std::optional<BatchCurve> fitted_batch_curve(const std::string& family);
const std::vector<BatchCurve>& fitted_batch_curves();
// For a family without a sweep: power flat (the fit pooled over the V100's families is: half
// filled at bs1), step time from the median k of the fitted families.
BatchCurve default_batch_curve();

// The curve of a described workload: its family's (or `profile`'s) where a table here sweeps it,
// else the default. (Scaling shufflenetv2's curve by image size for other image families was
// tried: on the V100 table it does worse for resnet50 than flat, 2.9% against 1.5%.)
BatchCurve batch_curve_for(const WorkloadDesc& w, const std::string& profile = "");

// A precision's rate of clock-bound work and bytes moved, relative to 16-bit (fp16, bf16, amp,
// mixed: the twin's profiles), with where the figure comes from. nullopt for one not modelled
// (fp8, int8).
struct PrecisionRates {
  double compute_rate = 1;
  double bytes = 1;
  std::string basis;
};
std::optional<PrecisionRates> precision_rates(const std::string& precision);

}  // namespace regime::predict
