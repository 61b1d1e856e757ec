// regime predict --gpu MODEL --workload DESC --predictor P [--json]
// regime predict eval (--measured FILE... | --db FILE) --predictors LIST [--json]
// A first guess of a pair's power and regime before measuring, and the guesses scored against
// measurements (src/session/predict/predict.hpp does the work; docs/predict.md).
#include "session/predict/predict.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/llm_options.hpp"
#include "common/error.hpp"
#include "session/predict/predict_view.hpp"

namespace regime::cli {

void add_predict(CLI::App& root, Context&) {
  auto* sub = root.add_subcommand(
      "predict", "Predict a pair's power and regime before measuring (a first guess only)");
  auto r = std::make_shared<session::PredictRequest>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("--gpu", r->gpu, "GPU model or name (data/gpus: t4, v100, h200, ...)");
  auto workload = std::make_shared<std::string>();
  sub->add_option("--workload", *workload,
                  "What trains: model, batch, precision, input size, e.g. \"resnet50 bs256 bf16 "
                  "224x224\" or imagenet/resnet50/bs128/adadelta");
  auto predictor = std::make_shared<std::string>("twin");
  sub->add_option("--predictor", *predictor,
                  "spec-baseline | twin | spec-baseline:one-shot | twin:one-shot | llm:zero-shot "
                  "| llm:spec | llm:one-shot (default twin)");
  auto example_workload = std::make_shared<std::string>();
  sub->add_option("--example-workload", *example_workload,
                  "One-shot predictors: the measured example's workload (same GPU)");
  sub->add_option("--example-power", r->example_power_W,
                  "One-shot: the example's measured mean power at the default limit, W")
      ->check(number_in(0, 10000, true));
  sub->add_option("--example-from", r->example_from,
                  "One-shot: a sweep table, trace or run database holding the example")
      ->check(CLI::ExistingFile);
  auto db = std::make_shared<std::string>();
  sub->add_option("--db", *db,
                  "Run database where LLM answers are cached (default: STATE_DIR/runs.sqlite)");
  add_llm_options(sub, r->llm);
  sub->add_flag("--show-prompt", r->show_prompt,
                "llm:* predictors: print the chat messages that would be sent, send nothing");
  sub->add_flag("--json", *json, "Machine-readable output");

  auto* eval = sub->add_subcommand("eval", "Score predictors against measurements");
  auto e = std::make_shared<session::EvalRequest>();
  auto ejson = std::make_shared<bool>(false);
  eval->add_option("--measured", e->measured,
                   "Sweep table(s) or trace(s) (a trace's steps file beside it); repeatable")
      ->check(CLI::ExistingFile);
  eval->add_option("--gpu", e->gpu, "The GPU of the traces given (a trace does not name it)");
  auto eval_db = std::make_shared<std::string>();
  eval->add_option("--db", *eval_db, "Run database: its probes at the default limit and its sweeps")
      ->check(CLI::ExistingFile);
  auto predictor_names = std::make_shared<std::vector<std::string>>();
  eval->add_option("--predictors", *predictor_names, "Comma-separated predictors to score")
      ->delimiter(',')
      ->required();
  auto examples = std::make_shared<std::string>("first");
  eval->add_option("--examples", *examples,
                   "One-shot predictors: the example is the first workload of each GPU (first, "
                   "default) or each workload in turn (all)");
  eval->add_flag("--by-family", e->by_family,
                 "Score per GPU and model family (the workload's model), one-shot examples "
                 "from the same family, and sum each predictor's families up (median, worst, "
                 "how many over 15%)");
  auto cache_db = std::make_shared<std::string>();
  eval->add_option(
      "--cache-db", *cache_db,
      "Run database for cached LLM answers (default: --db, else STATE_DIR/runs.sqlite)");
  add_llm_options(eval, e->llm);
  eval->add_flag("--json", *ejson, "Machine-readable output");

  sub->callback([=] {
    if (eval->parsed()) {
      e->predictors.clear();
      for (const std::string& name : *predictor_names)
        e->predictors.push_back(predict::choose_predictor(name));
      if (!eval_db->empty()) e->db = DatabaseLocation::from_text(*eval_db);
      if (!cache_db->empty()) e->cache_db = DatabaseLocation::from_text(*cache_db);
      e->examples = predict::parse_example_mode(*examples);
      auto rep = session::run_predict_eval(*e);
      if (*ejson) return print_json(session::to_json(rep));
      std::cout << session::to_text(rep, e->by_family);
      for (const std::string& line : session::skipped_lines(rep)) std::cerr << line << "\n";
      return;
    }
    if (r->gpu.empty() || workload->empty())
      throw Error(ErrorKind::InvalidArgument,
                  "predict needs --gpu and --workload, e.g. `regime predict --gpu t4 --workload "
                  "\"resnet50 bs64 fp16\"`; `regime predict eval` scores predictors");
    r->workload = predict::parse_workload(*workload);
    if (!example_workload->empty())
      r->example_workload = predict::parse_workload(*example_workload);
    r->predictor = predict::choose_predictor(*predictor);
    r->db = DatabaseLocation::from_text(*db);
    auto rep = session::run_predict(*r);
    // A predictor with no answer at all is an error, not a row of dashes.
    const predict::Prediction& p = rep.prediction;
    if (!r->show_prompt && !p.avg_power_W && !p.time_per_step_s && !p.energy_per_step_J &&
        !p.regime)
      throw Error(ErrorKind::NotFound, fmt::format("no prediction from {}: {}", p.predictor,
                                                   p.note.empty() ? "no answer" : p.note));
    if (*json) return print_json(session::to_json(rep));
    std::cout << session::to_text(rep);
  });
}

}  // namespace regime::cli
