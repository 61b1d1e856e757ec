#pragma once
// Predictors: a guess of what a GPU + workload pair will draw before anything is measured (the
// study's LLM experiment, a rule from the spec sheet, the twin). Each predicts the mean power at
// the GPU's default limit and, where it can, time and energy per step, the regime and its own
// uncertainty. Predictions are a first guess: `regime predict eval` scores them against
// measurements (docs/predict.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predict/workload.hpp"

namespace regime::predict {

// One measured workload on the same GPU: the one-shot example.
struct Example {
  WorkloadDesc workload;
  double avg_power_W = 0;
  std::optional<double> time_per_step_s;
  std::optional<std::string> regime;
};

struct PredictQuery {
  std::string gpu;  // a data/gpus model or name ("t4", "Tesla V100", "V100")
  WorkloadDesc workload;
  std::optional<Example> example;  // for the one-shot predictors
};

struct Prediction {
  std::string predictor;
  std::optional<double> avg_power_W;  // at the GPU's default limit
  std::optional<double> time_per_step_s;
  std::optional<double> energy_per_step_J;
  std::optional<std::string> regime;           // analysis::to_string(Regime) names
  std::optional<double> power_half_width_rel;  // the predictor's own interval, when it has one
  std::string note;                            // where it came from, or why there is no answer
};

class Predictor {
 public:
  virtual ~Predictor() = default;
  virtual std::string name() const = 0;
  // One-shot predictors need PredictQuery::example (Error InvalidArgument without it).
  virtual bool needs_example() const { return false; }
  virtual Prediction predict(const PredictQuery& query) = 0;
  // Requests sent to a remote service and answers found in its cache (LLM predictors).
  virtual int requests_sent() const { return 0; }
  virtual int cache_hits() const { return 0; }
};

// `spec-baseline`: the nameplate rule, what a person assumes from the spec sheet alone: a
// training job draws the default power limit and is held by it (cap-bound). No time or energy.
std::unique_ptr<Predictor> spec_baseline();

// `twin`: the twin's steady state (twin::steady_state) at the default limit for the built-in
// workload profile the description names (sim:NAME, or an alias: bert -> transformer, ...). No
// answer (nulls and a note) for a model the twin has no profile of. A precision other than the
// profile's 16-bit runs the profile's work at that precision's rate (batch_model.hpp); a batch
// size other than the profile's moves power and step time along the family's batch curve. The
// note names both.
std::unique_ptr<Predictor> twin_predictor();

// `NAME:one-shot` for a non-LLM predictor: calibrated on one measured workload of the same GPU.
// An example of the query's model family at a known batch size is moved along the family's batch
// curve to the query's batch size (times the base's ratio between the two precisions); any other
// example scales the base's power for the query by measured / predicted power of the example.
// The regime is cap-bound when the power reaches 95% of the default limit, else the base's
// (headroom where the base said cap-bound).
std::unique_ptr<Predictor> one_shot(std::unique_ptr<Predictor> base);

// The twin's built-in profile for a described workload; empty when it has none.
std::string twin_profile_for(const WorkloadDesc& w);

}  // namespace regime::predict
