#pragma once
// Batch size and precision in the first guess. A model family's power against its batch size on
// one GPU, anchored at one known point (a measured example or the twin's profile):
//   P(b) = P_static + A * s(b),   s(b) = b^n / (b^n + h^n)
// P_static is the spec's static power (what a busy card draws while it waits: a tiny batch
// leaves it there), A what the family draws over it once the card is full, h the batch at which
// it fills half of that (0: power does not change with the batch), n one exponent for all
// families. A family's curve gives h0, the half-fill batch of the tables it was fitted on, and f,
// the share of (limit - static) it draws when full. Cards fill at different batches (the RTX 6000
// later than the V100), so the known point places the curve on the card: of the (A, h) that pass
// through it, the one nearest (f * (limit - static), h0), by the squared logarithms of the two
// ratios. A point already at the family's full power leaves h at h0; one part-way up moves h to
// where it sits. Step time grows with the batch past a per-step overhead worth k samples:
// t(b) = t(b_ref) * (k + b) / (k + b_ref).
// h0, f and k are fitted per family on its batch sweeps: the two Zeus tables (V100, RTX 6000)
// and a real H200's (tests/data/batch_sweeps); the form was chosen by fitting on each Zeus table
// and scoring on the other. h0 holds at one compute rate: a card that runs the work r times faster
// fills at r times the batch (docs/predict.md, "Batch size and precision").
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "predict/workload.hpp"
#include "trace/sweep_table.hpp"
#include "twin/spec.hpp"

namespace regime::predict {

struct BatchCurve {
  std::string family;           // the model token it was fitted on; empty for the default
  double power_half_batch = 0;  // h0 (at ref_rate_tflops); 0: flat
  double time_half_batch = 0;   // k
  std::string basis;            // what it was fitted on, for the predictors' notes
  double full_share = 1;        // f: share of (limit - static power) drawn once the card is full
  // The one-shot power MAPE of the family's curve fitted on all but one of its sweeps and scored
  // on that one, the largest over its sweeps (the default curve: the median over the families,
  // each left out of the pool): how far a power moved along it may be off where it was not
  // fitted. 0: none.
  double held_out_power_pct = 0;
  // The compute rate h0 holds at (TFLOPS at the workload's precision): a card that runs the
  // family's work r times faster needs r times the batch to fill (h = h0 * r). 0: h0 everywhere.
  double ref_rate_tflops = 0;
};

// n, the least summed one-shot error over the families among 1, 1.25, ..., 3, on each table.
inline constexpr double kPowerBatchExponent = 1.75;

// One workload of a family on one GPU at the default limit.
struct BatchPoint {
  double batch = 0;
  double avg_power_W = 0;
  double time_s = 0;      // per unit of work of the table (an epoch: a fixed number of samples)
  std::string dataset;    // epochs of different data sets are not comparable in time
  std::string precision;  // as the workload says it (empty: unsaid)
};

// One family's points on one GPU, with that GPU's static power and default limit.
struct BatchSweep {
  std::vector<BatchPoint> points;
  double static_W = 0;
  double cap_W = 0;
  double rate_tflops = 0;  // the card's compute rate at the sweep's precision (0: unknown)
};

// h0 carried to a card and precision that run at `rate_tflops`: h0 * rate / the curve's reference
// rate (h0 where either is unknown).
double half_batch_at(const BatchCurve& curve, double rate_tflops);

// A card's compute rate at a precision: its 16-bit tensor rate times the precision's share of it
// (precision_rates); the 16-bit rate where the precision is unsaid or not modelled.
double compute_rate_tflops(const twin::GpuSpec& spec, const std::string& precision);

// The families of a sweep table (the workload's model token) and their points at each
// workload's default limit (row_at_default); workloads without a batch size are left out. A
// table timed per step has its times divided by the batch, so that they compare as epochs do.
std::map<std::string, std::vector<BatchPoint>> batch_points(const SweepTable& table);

// Where a known point places the curve on a card: the half-fill batch h and the power A drawn
// over the static power once full (h = 0: flat, A the point's excess).
struct CurvePlace {
  double half_batch = 0;
  double full_excess_W = 0;
};
// `rate_tflops`: the card's rate at the known point's precision (half_batch_at).
CurvePlace place_on_curve(const BatchCurve& curve, double static_W, double cap_W, double ref_W,
                          double ref_batch, double rate_tflops = 0,
                          double exponent = kPowerBatchExponent);
// The same place at another precision of the same card: the half-fill batch scaled by the rates.
CurvePlace at_rate(const CurvePlace& at, double from_rate_tflops, double to_rate_tflops);

// Power at `batch` on a curve already placed on the card, kept within [static_W, cap_W].
double power_on_curve_W(const CurvePlace& at, double static_W, double cap_W, double batch);

// Power at `batch` from a known `ref_W` at `ref_batch`, kept within [static_W, cap_W].
double power_at_batch_W(const BatchCurve& curve, double static_W, double cap_W, double ref_W,
                        double ref_batch, double batch);
// Step time at `batch` over step time at `ref_batch`.
double step_time_ratio(const BatchCurve& curve, double ref_batch, double batch);

// The mean absolute percentage error of the power when each point in turn is the example of the
// others (what `predict eval --by-family --examples all` scores).
double one_shot_power_mape_pct(const BatchCurve& curve, const BatchSweep& sweep,
                               double exponent = kPowerBatchExponent);
// The same for the time of a unit of work (an epoch: samples / batch steps), within each data set.
double one_shot_time_mape_pct(const BatchCurve& curve, const std::vector<BatchPoint>& points);

// f as the mean over the sweeps of the highest power's share of (limit - static); h0 by the least
// summed one-shot power error over 0 and 2^(i/4), i = 0..55; k as the mean over the sweeps of the
// least squares of the epoch time against 1 / batch over the family's largest data set
// (T = N c (k / b + 1)).
BatchCurve fit_batch_curve(const std::string& family, const std::vector<BatchSweep>& sweeps,
                           double exponent = kPowerBatchExponent);

// The curves fitted on tests/data/zeus/V100.sweep.csv and RTX6000.sweep.csv together (a unit test
// refits them and recomputes their held-out errors), by the family's model token and its aliases
// (bert -> bert_base_uncased, transformer -> bert_base_uncased). nullopt for a family no table here
// sweeps.
std::optional<BatchCurve> fitted_batch_curve(const std::string& family);
const std::vector<BatchCurve>& fitted_batch_curves();
// For a family without a sweep: the curve pooled over every swept family's sweeps (fit_batch_curve
// on all of them; BatchModel.TheDefaultIsThePoolOfEverySweep refits it), step time from the
// median k of the fitted families. Its held-out figure leaves each family out of the pool in turn.
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
// The share of a 16-bit training step's clock-bound work that is tensor-core math: fp32 runs it
// at the data sheet's fp32 share of the 16-bit tensor rate and the rest (elementwise work,
// reductions, launches) as fast as in 16 bits. The data sheet alone (a share of 1) put fp32 at
// 1/15 of bf16 on an H100, where its steps ran 0.9 to 2.8 times as long as TF32's. Chosen on a
// real H100 sweep of fp32 beside TF32 (tests/data/batch_sweeps/h100_fp32fit.sweep.csv) as the
// least mean one-shot power error of the twin over its six families, among 0 to 1
// (docs/predict.md gives the scan).
inline constexpr double kTensorShareOfClockBoundWork = 0.15;

// On a card: TF32 at the spec file's figure over its 16-bit tensor rate (peak_tflops), fp32 from
// its figure's share as above and never faster than TF32; TF32 on a card without it runs as fp32. A
// spec file without an fp32 figure gets the generic rates, said so.
std::optional<PrecisionRates> precision_rates(const std::string& precision,
                                              const twin::GpuSpec& spec);
// No card known: generic rates, TF32 at 1/2 and fp32 at 1/8 of the 16-bit tensor rate (by the
// data sheets; fp32 then as reached, above), said to be generic (per card fp32's sheet share spans
// 1/16 on the A100 to 1/2 on the P100).
std::optional<PrecisionRates> precision_rates(const std::string& precision);

}  // namespace regime::predict
