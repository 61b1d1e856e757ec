#include <fmt/format.h>

#include <cmath>
#include <map>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/measurement.hpp"
#include "common/error.hpp"
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
    const twin::WorkloadParams w = twin::workload_on(twin::sim_workload_profile(profile), spec);
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
    // The profile is one batch size and precision: say so rather than answer another as if it
    // had been modelled.
    std::vector<std::string> unmodelled;
    if (q.workload.batch) unmodelled.push_back(fmt::format("batch {}", *q.workload.batch));
    if (!q.workload.precision.empty()) unmodelled.push_back(q.workload.precision);
    if (!unmodelled.empty())
      p.note += fmt::format(
          "; {} not modelled: the profile has its own batch size and "
          "precision, so every batch size and precision gets this answer",
          fmt::join(unmodelled, ", "));
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
    PredictQuery eq{q.gpu, q.example->workload, std::nullopt};
    const Prediction at_example = base_->predict(eq);
    Prediction p = base_->predict(PredictQuery{q.gpu, q.workload, std::nullopt});
    p.predictor = name();
    if (!p.avg_power_W || !at_example.avg_power_W || !(*at_example.avg_power_W > 0)) {
      p.avg_power_W.reset();
      p.time_per_step_s.reset();
      p.energy_per_step_J.reset();
      p.regime.reset();
      p.note = fmt::format("{} has no answer for the query or for the example '{}'", base_->name(),
                           q.example->workload.text);
      return p;
    }
    const double scale = q.example->avg_power_W / *at_example.avg_power_W;
    const twin::GpuSpec spec = twin::load_gpu_spec(q.gpu);
    p.avg_power_W = *p.avg_power_W * scale;
    if (p.time_per_step_s) p.energy_per_step_J = *p.avg_power_W * *p.time_per_step_s;
    if (*p.avg_power_W >= kCapPowerRatio * spec.default_limit_W)
      p.regime = to_string(Regime::CapBound);
    else if (!p.regime || *p.regime == to_string(Regime::CapBound))
      p.regime = to_string(Regime::Headroom);
    p.note = fmt::format(
        "{} scaled by {:.3f}: the example '{}' measured {:.1f} W against {:.1f} W "
        "predicted",
        base_->name(), scale, q.example->workload.text, q.example->avg_power_W,
        *at_example.avg_power_W);
    return p;
  }

 private:
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
