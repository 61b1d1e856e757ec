// regime predict --gpu MODEL --workload DESC --predictor P [--json]
// regime predict eval (--measured FILE... | --db FILE) --predictors LIST [--json]
// A first guess of a pair's power and regime before measuring, and the guesses scored against
// measurements (src/session/predict.hpp does the work; docs/predict.md).
#include "session/predict.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/llm_options.hpp"
#include "common/error.hpp"

namespace regime::cli {

namespace {

std::string fmt_opt(const std::optional<double>& v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

void print_prediction(const session::PredictReport& r) {
  const auto& p = r.prediction;
  std::cout << fmt::format("{} on {} ({}):\n", r.workload, r.gpu, p.predictor);
  std::string power = fmt_opt(p.avg_power_W, "{:.1f} W");
  if (p.avg_power_W && p.power_half_width_rel)
    power += fmt::format(" (+-{:.0f}%)", 100 * *p.power_half_width_rel);
  std::cout << fmt::format("  mean power at the default limit: {}\n", power);
  std::cout << fmt::format("  time per step: {}   energy per step: {}\n",
                           fmt_opt(p.time_per_step_s, "{:.4g} s"),
                           fmt_opt(p.energy_per_step_J, "{:.4g} J"));
  std::cout << fmt::format("  regime: {}\n", p.regime.value_or("-"));
  std::cout << fmt::format("  from: {}\n", p.note);
  std::cout << "(a prediction, not a measurement: `regime probe` measures the pair)\n";
}

void print_eval(const session::EvalReport& r, bool by_family) {
  std::cout << fmt::format("{} measured case(s)\n", r.cases.size());
  std::cout << fmt::format("{:<14} {}{:<24} {:>5} {:>10} {:>17} {:>9} {:>10}\n", "gpu",
                           by_family ? fmt::format("{:<20} ", "family") : "", "predictor", "n",
                           "MAPE %", "95% CI %", "regime", "unanswered");
  for (const auto& row : r.rows) {
    std::string ci = row.mape_ci_pct ? fmt::format("[{:.1f}, {:.1f}]", row.mape_ci_pct->first,
                                                   row.mape_ci_pct->second)
                                     : "-";
    std::string acc = row.regime_accuracy
                          ? fmt::format("{:.0f}% /{}", 100 * *row.regime_accuracy, row.regime_n)
                          : "-";
    std::cout << fmt::format("{:<14} {}{:<24} {:>5} {:>10} {:>17} {:>9} {:>10}\n", row.gpu,
                             by_family ? fmt::format("{:<20} ", row.group) : "", row.predictor,
                             row.n, fmt_opt(row.mape_power_pct, "{:.1f}"), ci, acc, row.unanswered);
  }
  std::cout << "(MAPE: mean absolute percentage error of the mean power at the default limit; "
               "regime: share named right / cases where both are known)\n";
  if (r.requests_sent > 0 || r.cache_hits > 0)
    std::cout << fmt::format("LLM: {} request(s) sent, {} answer(s) from the cache\n",
                             r.requests_sent, r.cache_hits);
}

}  // namespace

void add_predict(CLI::App& root, Context&) {
  auto* sub = root.add_subcommand(
      "predict", "Predict a pair's power and regime before measuring (a first guess only)");
  auto r = std::make_shared<session::PredictRequest>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("--gpu", r->gpu, "GPU model or name (data/gpus: t4, v100, h200, ...)");
  sub->add_option("--workload", r->workload,
                  "What trains: model, batch, precision, input size, e.g. \"resnet50 bs256 bf16 "
                  "224x224\" or imagenet/resnet50/bs128/adadelta");
  r->predictor = "twin";
  sub->add_option("--predictor", r->predictor,
                  "spec-baseline | twin | spec-baseline:one-shot | twin:one-shot | llm:zero-shot "
                  "| llm:spec | llm:one-shot (default twin)");
  sub->add_option("--example-workload", r->example_workload,
                  "One-shot predictors: the measured example's workload (same GPU)");
  sub->add_option("--example-power", r->example_power_W,
                  "One-shot: the example's measured mean power at the default limit, W")
      ->check(number_in(0, 10000, true));
  sub->add_option("--example-from", r->example_from,
                  "One-shot: a sweep table, trace or run database holding the example")
      ->check(CLI::ExistingFile);
  sub->add_option("--db", r->db,
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
  eval->add_option("--db", e->db, "Run database: its probes at the default limit and its sweeps")
      ->check(CLI::ExistingFile);
  eval->add_option("--predictors", e->predictors, "Comma-separated predictors to score")
      ->delimiter(',')
      ->required();
  eval->add_option("--examples", e->examples,
                   "One-shot predictors: the example is the first workload of each GPU (first, "
                   "default) or each workload in turn (all)");
  eval->add_flag("--by-family", e->by_family,
                 "Score per GPU and model family (the workload's model), one-shot examples "
                 "from the same family");
  eval->add_option(
      "--cache-db", e->cache_db,
      "Run database for cached LLM answers (default: --db, else STATE_DIR/runs.sqlite)");
  add_llm_options(eval, e->llm);
  eval->add_flag("--json", *ejson, "Machine-readable output");

  sub->callback([=] {
    if (eval->parsed()) {
      auto rep = session::run_predict_eval(*e);
      if (*ejson) {
        print_json(to_json(rep));
        return;
      }
      print_eval(rep, e->by_family);
      // The first few, then how many: with --examples all one profile-less case repeats a lot.
      constexpr size_t kShown = 10;
      for (size_t i = 0; i < rep.skipped.size() && i < kShown; ++i)
        std::cerr << "regime: no prediction: " << rep.skipped[i] << "\n";
      if (rep.skipped.size() > kShown)
        std::cerr << fmt::format(
            "regime: ... and {} more without a prediction (the rows count "
            "them)\n",
            rep.skipped.size() - kShown);
      return;
    }
    if (r->gpu.empty() || r->workload.empty())
      throw Error(ErrorKind::InvalidArgument,
                  "predict needs --gpu and --workload, e.g. `regime predict --gpu t4 --workload "
                  "\"resnet50 bs64 fp16\"`; `regime predict eval` scores predictors");
    auto rep = session::run_predict(*r);
    // A predictor with no answer at all is an error, not a row of dashes.
    const predict::Prediction& p = rep.prediction;
    if (!r->show_prompt && !p.avg_power_W && !p.time_per_step_s && !p.energy_per_step_J &&
        !p.regime)
      throw Error(ErrorKind::NotFound, fmt::format("no prediction from {}: {}", p.predictor,
                                                   p.note.empty() ? "no answer" : p.note));
    if (r->show_prompt) {
      nlohmann::json msgs = nlohmann::json::array();
      for (const auto& m : rep.prompt) msgs.push_back({{"role", m.role}, {"content", m.content}});
      if (*json) {
        print_json({{"messages", msgs}});
      } else {
        for (const auto& m : rep.prompt) std::cout << "[" << m.role << "]\n" << m.content << "\n";
      }
      return;
    }
    if (*json)
      print_json(to_json(rep));
    else
      print_prediction(rep);
  });
}

}  // namespace regime::cli
