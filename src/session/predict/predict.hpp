#pragma once
// `regime predict` and `regime predict eval`: a predictor made by name (src/predict) with its LLM
// answers cached in the run store, the measured cases read from sweep tables, traces or the run
// store, and the scores.
#include <optional>
#include <string>
#include <vector>

#include "predict/eval.hpp"
#include "predict/llm.hpp"
#include "predict/predictor.hpp"
#include "store/database_location.hpp"

namespace regime::session {

struct LlmSettings {
  std::string endpoint;
  std::string model;
  std::string ca_file;
  double timeout_s = 60;
  int retries = 3;
  bool cache = true;  // keep and reuse answers in the run store
};

struct PredictRequest {
  std::string gpu;
  predict::WorkloadDesc workload;      // read at the CLI (predict::parse_workload)
  predict::PredictorChoice predictor;  // chosen by name at the CLI (predict::choose_predictor)
  // One-shot: the example's workload and either its measured power or where it was measured
  // (a sweep table, a trace with --gpu, or a run database).
  std::optional<predict::WorkloadDesc> example_workload;
  std::optional<double> example_power_W;
  std::string example_from;
  LlmSettings llm;
  DatabaseLocation db;       // run database (LLM cache)
  bool show_prompt = false;  // llm:* only: build the prompt, send nothing
};

struct PredictReport {
  std::string gpu;
  std::string workload;
  predict::Prediction prediction;
  std::optional<predict::Example> example;
  int requests_sent = 0;                     // to the LLM endpoint (0 when answered from the cache)
  bool prompt_only = false;                  // show_prompt: no prediction was asked for
  std::vector<predict::ChatMessage> prompt;  // with show_prompt: what would be sent
};

PredictReport run_predict(const PredictRequest& request);

struct EvalRequest {
  std::vector<std::string> measured;   // sweep tables and traces
  std::string gpu;                     // the GPU of the traces (a trace does not name it)
  std::optional<DatabaseLocation> db;  // a run database to read probes and sweeps from
  std::vector<predict::PredictorChoice> predictors;  // chosen at the CLI (choose_predictor)
  predict::ExampleMode examples = predict::ExampleMode::First;  // --examples first | all
  bool by_family = false;
  LlmSettings llm;
  // Where LLM answers are cached; none: `db`, else the default store.
  std::optional<DatabaseLocation> cache_db;
};

struct EvalReport {
  std::vector<predict::MeasuredCase> cases;
  std::vector<predict::EvalRow> rows;
  std::vector<predict::FamilySummary> families;  // with by_family: each predictor over families
  std::vector<std::string> skipped;  // cases a predictor could not answer, one line each
  int requests_sent = 0;
  int cache_hits = 0;
};

// The measured cases of a file: a sweep table (first line "workload,...") or a trace ("t_s,...",
// its steps file beside it; `gpu` names its GPU). Error Parse naming the file otherwise.
std::vector<predict::MeasuredCase> cases_from_file(const std::string& path, const std::string& gpu);
// The done probes measured at their GPU's default limit and the kept sweeps of a run database.
std::vector<predict::MeasuredCase> cases_from_db(const DatabaseLocation& db);

EvalReport run_predict_eval(const EvalRequest& request);

// The predicted draw at the default limit of a GPU + workload (for `regime sweep --prior`);
// nullopt when the predictor has no answer. One-shot predictors are refused here.
std::optional<double> predicted_draw_W(const predict::PredictorChoice& predictor,
                                       const std::string& gpu, const std::string& workload,
                                       const LlmSettings& llm, const DatabaseLocation& db);

}  // namespace regime::session
