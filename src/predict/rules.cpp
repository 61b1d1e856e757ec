#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/measurement.hpp"
#include "common/error.hpp"
#include "predict/batch_model.hpp"
#include "predict/predictor.hpp"
#include "trace/trace.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"
#include "twin/spec.hpp"
#include "twin/uncertainty.hpp"

namespace regime::predict {

namespace {

class SpecBaseline : public Predictor {
 public:
  std::string name() const override { return "spec-baseline"; }
  Prediction predict(const PredictQuery& q) override {
    const twin::GpuSpec spec = twin::load_gpu_spec(q.gpu);
    Prediction p;
    p.predictor = name();
    p.avg_power_W = spec.default_limit_W;
    p.regime = to_string(Regime::CapBound);
    p.note = fmt::format("the default limit of the {} ({:g} W): a training job assumed to draw it",
                         spec.name, spec.default_limit_W);
    return p;
  }
};

std::string regime_of(const twin::SteadyState& s) {
  if (s.shutdown || (s.reasons & (reason::kSwThermal | reason::kHwThermal)) != 0)
    return to_string(Regime::ThermalBound);
  if ((s.reasons & reason::kSwPowerCap) != 0) return to_string(Regime::CapBound);
  if (s.util_pct < kUnderutilizedPct) return to_string(Regime::Underutilized);
  return to_string(Regime::Headroom);
}

// A half-fill batch as a batch size is said: whole from 100 up (bs6890, not bs6.89e+03).
std::string batch_words(double batch) {
  return batch >= 100 ? fmt::format("bs{:.0f}", batch) : fmt::format("bs{:.3g}", batch);
}

// `at`: where the known point placed the curve on this card, whose rate is `rate_tflops`.
std::string curve_words(const BatchCurve& c, const CurvePlace& at, double rate_tflops) {
  if (c.family.empty()) return c.basis;
  if (c.power_half_batch <= 0)
    return fmt::format("the {} curve, flat, fitted on {}", c.family, c.basis);
  // place_on_curve's answer for a point with nothing over the static power: no curve through it.
  if (at.half_batch <= 0)
    return fmt::format(
        "the {} curve not used: the known point is at or under the card's static power, where "
        "every batch is put",
        c.family);
  const double card_h = half_batch_at(c, rate_tflops);
  const std::string card =
      std::abs(card_h / c.power_half_batch - 1) < 0.01
          ? std::string()
          : fmt::format(", {} on this card's {:.4g} TFLOPS", batch_words(card_h), rate_tflops);
  if (std::abs(at.half_batch / card_h - 1) < 0.01)
    return fmt::format("the {} curve, half-filled at {}{}, fitted on {}", c.family,
                       batch_words(c.power_half_batch), card, c.basis);
  return fmt::format("the {} curve, half-filled at {} here ({}{} on {})", c.family,
                     batch_words(at.half_batch), batch_words(c.power_half_batch), card, c.basis);
}

// A power moved along a family's curve carries the curve's held-out error besides the base's own
// interval: the two combined root-sum-square, as independent errors. Only where the curve changed
// the answer (a factor other than 1, or a rising curve carrying it to another batch) and has a
// held-out figure. Returns the note's clause, empty when nothing was widened.
std::string widen_for_curve(Prediction& p, const std::string& base, const BatchCurve& c,
                            const CurvePlace& at, double factor, double ref_batch, double batch) {
  const bool moved = std::abs(factor - 1) > 1e-9 || (at.half_batch > 0 && batch != ref_batch);
  if (!moved || !(c.held_out_power_pct > 0)) return "";
  const double curve_rel = c.held_out_power_pct / 100;
  const std::string curve =
      c.family.empty()
          ? fmt::format(
                "the pooled curve's {:.1f}% held out (the median over the swept "
                "families, each left out of the pool in turn)",
                c.held_out_power_pct)
          : fmt::format(
                "the {} curve's {:.1f}% held out (each of its sweeps left out of the fit in turn)",
                c.family, c.held_out_power_pct);
  if (!p.power_half_width_rel) {
    p.power_half_width_rel = curve_rel;
    return fmt::format("power +-{:.0f}%: {}", 100 * curve_rel, curve);
  }
  const double base_rel = *p.power_half_width_rel;
  p.power_half_width_rel = std::hypot(base_rel, curve_rel);
  return fmt::format("power +-{:.0f}%: the {}'s +-{:.0f}% and {}, root-sum-square",
                     100 * *p.power_half_width_rel, base, 100 * base_rel, curve);
}

// Two descriptions of one model family: the same model token, or two names of one fitted curve's
// family ("shufflenet_v2" and "shufflenetv2").
bool one_family(const WorkloadDesc& a, const WorkloadDesc& b) {
  if (a.model.empty() || b.model.empty()) return false;
  if (a.model == b.model) return true;
  const auto ca = fitted_batch_curve(a.model), cb = fitted_batch_curve(b.model);
  return ca && cb && ca->family == cb->family;
}

// Cap-bound when the power reaches 95% of the default limit (the classifier's kCapPowerRatio);
// under it, the base's regime unless that was cap-bound.
void settle_regime(Prediction& p, const twin::GpuSpec& spec) {
  if (*p.avg_power_W >= kCapPowerRatio * spec.default_limit_W)
    p.regime = to_string(Regime::CapBound);
  else if (!p.regime || *p.regime == to_string(Regime::CapBound))
    p.regime = to_string(Regime::Headroom);
}

class TwinPredictor : public Predictor {
 public:
  std::string name() const override { return "twin"; }
  Prediction predict(const PredictQuery& q) override {
    const twin::GpuSpec spec = twin::load_gpu_spec(q.gpu);
    Prediction p;
    p.predictor = name();
    const std::string profile = twin_profile_for(q.workload);
    if (profile.empty()) {
      p.note = fmt::format("the twin has no profile of '{}' (it knows {})",
                           q.workload.model.empty() ? q.workload.text : q.workload.model,
                           fmt::join(twin::sim_workload_names(), ", "));
      return p;
    }
    const twin::SimWorkloadProfile ref = twin::sim_workload_profile(profile);
    twin::WorkloadParams w = twin::workload_on(ref, spec);
    std::vector<std::string> said;
    // Precision through the twin's physics: the clock-bound work at the precision's rate, the
    // memory-bound work at its bytes.
    if (!q.workload.precision.empty()) {
      if (auto rates = precision_rates(q.workload.precision, spec)) {
        w.clock_s /= rates->compute_rate;
        w.memory_s *= rates->bytes;
        if (rates->compute_rate != 1 || rates->bytes != 1)
          said.push_back(fmt::format("precision {} for the profile's {}: {}", q.workload.precision,
                                     ref.precision, rates->basis));
      } else {
        said.push_back(fmt::format("precision {} not modelled (the profile's {} assumed)",
                                   q.workload.precision, ref.precision));
      }
    }
    const twin::SteadyState s = twin::steady_state(spec, w, spec.default_limit_W);
    p.avg_power_W = s.avg_power_W;
    if (!s.shutdown) {
      p.time_per_step_s = s.time_s;
      p.energy_per_step_J = s.energy_J;
    }
    p.regime = regime_of(s);
    p.power_half_width_rel = twin::spec_uncertainty(spec, spec.default_limit_W).half_width_rel;
    p.note = fmt::format("twin steady state of sim:{} on the {} at {:g} W ({:.0f} MHz, {:.0f} C)",
                         profile, spec.name, spec.default_limit_W, s.sm_MHz, s.temp_C);
    if (q.workload.batch && ref.batch && *q.workload.batch == *ref.batch) {
      said.push_back(fmt::format("at the profile's own batch size, bs{}", *ref.batch));
    } else if (q.workload.batch && ref.batch && !s.shutdown) {
      const BatchCurve c = batch_curve_for(q.workload, profile);
      const double b = *q.workload.batch, b_ref = *ref.batch;
      const double rate = compute_rate_tflops(spec, q.workload.precision);
      const CurvePlace at = place_on_curve(c, spec.static_power_W(), spec.default_limit_W,
                                           s.avg_power_W, b_ref, rate);
      p.avg_power_W = power_on_curve_W(at, spec.static_power_W(), spec.default_limit_W, b);
      p.time_per_step_s = s.time_s * step_time_ratio(c, b_ref, b);
      p.energy_per_step_J = *p.avg_power_W * *p.time_per_step_s;
      settle_regime(p, spec);
      said.push_back(
          fmt::format("power scaled from the profile's bs{} to bs{} by x{:.2f} and step "
                      "time by x{:.2f} ({})",
                      *ref.batch, *q.workload.batch, *p.avg_power_W / s.avg_power_W,
                      *p.time_per_step_s / s.time_s, curve_words(c, at, rate)));
      const std::string widened =
          widen_for_curve(p, name(), c, at, *p.avg_power_W / s.avg_power_W, b_ref, b);
      if (!widened.empty()) said.push_back(widened);
    } else if (q.workload.batch) {
      said.push_back(fmt::format("batch {} not modelled: sim:{} has no batch size",
                                 *q.workload.batch, profile));
    } else if (ref.batch) {
      said.push_back(fmt::format("batch size unsaid: the profile's bs{}", *ref.batch));
    }
    if (!said.empty()) p.note += "; " + fmt::format("{}", fmt::join(said, "; "));
    return p;
  }
};

class OneShot : public Predictor {
 public:
  explicit OneShot(std::unique_ptr<Predictor> base) : base_(std::move(base)) {}
  std::string name() const override { return base_->name() + ":one-shot"; }
  bool needs_example() const override { return true; }
  Prediction predict(const PredictQuery& q) override {
    if (!q.example)
      throw Error(ErrorKind::InvalidArgument, name() + " needs a measured example of the same GPU");
    const Example& ex = *q.example;
    if (one_family(q.workload, ex.workload) && q.workload.batch && ex.workload.batch)
      return same_family(q, ex);
    PredictQuery eq{q.gpu, ex.workload, std::nullopt};
    const Prediction at_example = base_->predict(eq);
    Prediction p = base_->predict(PredictQuery{q.gpu, q.workload, std::nullopt});
    p.predictor = name();
    if (!p.avg_power_W || !at_example.avg_power_W || !(*at_example.avg_power_W > 0)) {
      p.avg_power_W.reset();
      p.time_per_step_s.reset();
      p.energy_per_step_J.reset();
      p.regime.reset();
      p.note = fmt::format("{} has no answer for the query or for the example '{}'", base_->name(),
                           ex.workload.text);
      return p;
    }
    const double scale = ex.avg_power_W / *at_example.avg_power_W;
    const twin::GpuSpec spec = twin::load_gpu_spec(q.gpu);
    p.avg_power_W = *p.avg_power_W * scale;
    if (p.time_per_step_s) p.energy_per_step_J = *p.avg_power_W * *p.time_per_step_s;
    settle_regime(p, spec);
    p.note = fmt::format(
        "{} scaled by {:.3f}: the example '{}' measured {:.1f} W against {:.1f} W "
        "predicted",
        base_->name(), scale, ex.workload.text, ex.avg_power_W, *at_example.avg_power_W);
    return p;
  }

 private:
  // The example is the same family at another batch size: its measured power moved along the
  // family's batch curve (at each precision's rate), times the base's ratio for the precision
  // where the two differ.
  Prediction same_family(const PredictQuery& q, const Example& ex) {
    const twin::GpuSpec spec = twin::load_gpu_spec(q.gpu);
    Prediction p = base_->predict(PredictQuery{q.gpu, q.workload, std::nullopt});
    p.predictor = name();
    const BatchCurve c = batch_curve_for(q.workload, twin_profile_for(q.workload));
    const double b = *q.workload.batch, b_ex = *ex.workload.batch;
    // A precision no predictor models (int8, fp8) has no rate or ratio to give: the two are
    // taken alike. Otherwise the card fills at a batch in proportion to its rate at each.
    std::string unmodelled;
    for (const std::string& said : {q.workload.precision, ex.workload.precision})
      if (unmodelled.empty() && !said.empty() && !precision_rates(said, spec)) unmodelled = said;
    const double rate_ex = compute_rate_tflops(spec, ex.workload.precision);
    const double rate_q =
        unmodelled.empty() ? compute_rate_tflops(spec, q.workload.precision) : rate_ex;
    const CurvePlace at = place_on_curve(c, spec.static_power_W(), spec.default_limit_W,
                                         ex.avg_power_W, b_ex, rate_ex);
    const double moved_W = power_on_curve_W(at_rate(at, rate_ex, rate_q), spec.static_power_W(),
                                            spec.default_limit_W, b);
    double power_W = moved_W;
    std::string precision;
    if (q.workload.precision != ex.workload.precision) {
      // The base's ratio between the two precisions with no batch said (the twin: at its
      // profile's batch, off the curve): the curve already moved the fill by the two rates.
      WorkloadDesc at_q_precision = q.workload;
      at_q_precision.batch.reset();
      WorkloadDesc at_ex_precision = at_q_precision;
      at_ex_precision.precision = ex.workload.precision;
      const Prediction mine = base_->predict(PredictQuery{q.gpu, at_q_precision, std::nullopt});
      const Prediction other = base_->predict(PredictQuery{q.gpu, at_ex_precision, std::nullopt});
      double ratio = 1;
      if (unmodelled.empty() && mine.avg_power_W && other.avg_power_W && *other.avg_power_W > 0)
        ratio = *mine.avg_power_W / *other.avg_power_W;
      power_W = std::clamp(power_W * ratio, 0.0, spec.default_limit_W);
      precision =
          fmt::format("; precision {} for the example's {}: x{:.2f} ({})",
                      q.workload.precision.empty() ? "unsaid" : q.workload.precision,
                      ex.workload.precision.empty() ? "unsaid" : ex.workload.precision, ratio,
                      !unmodelled.empty() ? unmodelled + " not modelled, the two assumed alike"
                      : ratio == 1        ? base_->name() + " does not tell them apart, assumed"
                                          : "the " + base_->name() + "'s ratio");
    }
    p.avg_power_W = power_W;
    if (p.time_per_step_s) p.energy_per_step_J = power_W * *p.time_per_step_s;
    settle_regime(p, spec);
    p.note =
        fmt::format("the example '{}' ({:.1f} W at bs{:.0f}) scaled to bs{:.0f} by x{:.2f} ({}){}",
                    ex.workload.text, ex.avg_power_W, b_ex, b, moved_W / ex.avg_power_W,
                    curve_words(c, at, rate_ex), precision);
    const std::string widened =
        widen_for_curve(p, base_->name(), c, at, moved_W / ex.avg_power_W, b_ex, b);
    if (!widened.empty()) p.note += "; " + widened;
    return p;
  }

  std::unique_ptr<Predictor> base_;
};

}  // namespace

std::string twin_profile_for(const WorkloadDesc& w) {
  static const std::map<std::string, std::string> aliases = {{"bert", "transformer"},
                                                             {"bert_base_uncased", "transformer"},
                                                             {"bert-base", "transformer"},
                                                             {"bert-base-uncased", "transformer"},
                                                             {"gpt2", "transformer"},
                                                             {"mobilenetv2", "mobilenet_v2"},
                                                             {"mobilenet-v2", "mobilenet_v2"},
                                                             {"resnet-50", "resnet50"},
                                                             {"vgg-16", "vgg16"},
                                                             {"vit-b-16", "vit_b_16"},
                                                             {"vit_b16", "vit_b_16"},
                                                             {"densenet-121", "densenet121"},
                                                             {"matmul", "gemm"}};
  std::string m = w.model;
  if (auto it = aliases.find(m); it != aliases.end()) m = it->second;
  // ResNet-18 is profiled on CIFAR's 32x32 images only.
  if (m == "resnet18" && (w.dataset.rfind("cifar", 0) == 0 || w.input == "32x32"))
    m = "resnet18_cifar";
  for (const auto& name : twin::sim_workload_names())
    if (name == m) return m;
  return "";
}

std::unique_ptr<Predictor> spec_baseline() { return std::make_unique<SpecBaseline>(); }
std::unique_ptr<Predictor> twin_predictor() { return std::make_unique<TwinPredictor>(); }
std::unique_ptr<Predictor> one_shot(std::unique_ptr<Predictor> base) {
  return std::make_unique<OneShot>(std::move(base));
}

}  // namespace regime::predict
