#pragma once
// `llm:zero-shot`, `llm:spec`, `llm:one-shot`: the study's prompts sent to a chat-completions
// service, the answers read by parse_llm_answer and kept in an AnswerCache keyed by the model and
// the whole prompt, so that an evaluation runs again offline and at no cost.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predict/chat_client.hpp"
#include "predict/predictor.hpp"
#include "predict/prompt.hpp"

namespace regime::predict {

// Where answers are kept (the run store implements it: session/predict/predict.cpp). Only the
// model, the prompt and the answer: never the key or the endpoint's address.
class AnswerCache {
 public:
  virtual ~AnswerCache() = default;
  virtual std::optional<std::string> find(const std::string& model, const std::string& prompt) = 0;
  virtual void put(const std::string& model, const std::string& prompt,
                   const std::string& answer) = 0;
};

// The cache key's prompt text: the messages as JSON, exactly what is sent.
std::string prompt_key(const std::vector<ChatMessage>& messages);

struct LlmStats {
  int asked = 0;  // predictions made
  int cache_hits = 0;
  int refused = 0;  // answers that were not a power
};

// `cache` may be null (nothing kept). The client is made on the first question that the cache
// cannot answer: a fully cached run needs no endpoint at all.
class LlmPredictor : public Predictor {
 public:
  LlmPredictor(PromptKind kind, ChatOptions options, std::string api_key, AnswerCache* cache);
  std::string name() const override { return "llm:" + to_string(kind_); }
  bool needs_example() const override { return kind_ == PromptKind::OneShot; }
  // Error Parse (after caching nothing) when the answer is not a power.
  Prediction predict(const PredictQuery& query) override;
  const LlmStats& stats() const { return stats_; }
  // What predict() would send for `query`, sending nothing.
  std::vector<ChatMessage> prompt(const PredictQuery& query) const;
  int requests_sent() const override { return client_ ? client_->requests_sent() : 0; }
  int cache_hits() const override { return stats_.cache_hits; }

 private:
  PromptKind kind_;
  ChatOptions options_;
  std::string api_key_;
  AnswerCache* cache_;
  std::unique_ptr<ChatClient> client_;
  LlmStats stats_;
};

// The prompt an LLM predictor sends for a query (`regime predict --show-prompt` prints it).
std::vector<ChatMessage> prompt_for(PromptKind kind, const PredictQuery& query);

struct PredictorConfig {
  ChatOptions chat;     // for llm:*
  std::string api_key;  // for llm:*
  AnswerCache* cache = nullptr;
};

// A predictor by name: what `regime predict --predictor NAME` runs. A row's name is a whole
// name, or a prefix ending in ':' for a family (`llm:`) whose `variants` follow it; `make` gets
// what follows the prefix (empty for a whole name). Adding a predictor is one row of the table in
// llm.cpp: make_predictor and predictor_names read it.
struct PredictorEntry {
  std::string_view name;
  std::vector<std::string_view> variants;  // a family's names after the prefix, for the list
  std::string_view summary;
  std::unique_ptr<Predictor> (*make)(const std::string& rest, const PredictorConfig& config);
  // It asks a chat-completions service (`llm:`): it needs --model, and its answers are cached.
  bool asks_llm = false;
};
const std::vector<PredictorEntry>& predictor_table();

// A predictor chosen by name: its row of the table and, for a family, what follows the prefix.
struct PredictorChoice {
  std::string name;  // as given, e.g. "llm:spec"
  const PredictorEntry* entry = nullptr;
  std::string rest;  // after a family's prefix ("spec"); empty for a whole name
  bool asks_llm() const { return entry != nullptr && entry->asks_llm; }
};
// The row `name` names. Error InvalidArgument naming the choices, as make_predictor.
PredictorChoice choose_predictor(const std::string& name);
std::unique_ptr<Predictor> make_predictor(const PredictorChoice& choice,
                                          const PredictorConfig& config);

// spec-baseline, twin, spec-baseline:one-shot, twin:one-shot, llm:zero-shot, llm:spec,
// llm:one-shot. Error InvalidArgument naming the choices.
std::unique_ptr<Predictor> make_predictor(const std::string& name, const PredictorConfig& config);
const std::vector<std::string>& predictor_names();

}  // namespace regime::predict
