#include "predict/llm.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "predict/answer.hpp"

namespace regime::predict {

std::string prompt_key(const std::vector<ChatMessage>& messages) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& m : messages) j.push_back({{"role", m.role}, {"content", m.content}});
  return j.dump();
}

std::vector<ChatMessage> prompt_for(PromptKind kind, const PredictQuery& q) {
  std::optional<twin::GpuSpec> spec;
  if (kind == PromptKind::ZeroShot) {
    // The bare prompt names the GPU as its spec file does, when there is one, and says no more.
    try {
      spec = twin::load_gpu_spec(q.gpu);
    } catch (const Error&) {
    }
    return build_prompt(kind, spec ? spec->name : q.gpu, nullptr, q.workload, std::nullopt);
  }
  spec = twin::load_gpu_spec(q.gpu);
  return build_prompt(kind, spec->name, &*spec, q.workload, q.example);
}

LlmPredictor::LlmPredictor(PromptKind kind, ChatOptions options, std::string api_key,
                           AnswerCache* cache)
    : kind_(kind), options_(std::move(options)), api_key_(std::move(api_key)), cache_(cache) {
  if (options_.model.empty())
    throw Error(ErrorKind::InvalidArgument, "an LLM predictor needs --model NAME");
}

Prediction LlmPredictor::predict(const PredictQuery& q) {
  const auto messages = prompt_for(kind_, q);
  const std::string key = prompt_key(messages);
  ++stats_.asked;
  std::optional<std::string> content;
  if (cache_ != nullptr) content = cache_->find(options_.model, key);
  const bool cached = content.has_value();
  if (cached) {
    ++stats_.cache_hits;
  } else {
    if (options_.endpoint.empty())
      throw Error(ErrorKind::InvalidArgument,
                  name() + " needs --endpoint URL (no cached answer for this prompt and model)");
    if (!client_) client_ = std::make_unique<ChatClient>(options_, api_key_);
    content = client_->complete(messages);
  }
  // The client redacts what it receives; an answer cached by an older version may not be.
  content = redact_secret(std::move(*content), api_key_);
  LlmAnswer a;
  try {
    a = parse_llm_answer(*content);
  } catch (const Error&) {
    ++stats_.refused;
    throw;
  }
  // Only answers that are a power are kept: a refused one is asked again next time.
  if (!cached && cache_ != nullptr) cache_->put(options_.model, key, *content);
  Prediction p;
  p.predictor = name();
  p.avg_power_W = a.avg_power_W;
  p.regime = a.regime;
  p.note = fmt::format("{} answer of {}{}", a.form, options_.model, cached ? " (cached)" : "");
  return p;
}

const std::vector<std::string>& predictor_names() {
  static const std::vector<std::string> names = {
      "spec-baseline", "twin",        "spec-baseline:one-shot", "twin:one-shot", "llm:zero-shot",
      "llm:spec",      "llm:one-shot"};
  return names;
}

std::unique_ptr<Predictor> make_predictor(const std::string& name, const PredictorConfig& c) {
  if (name == "spec-baseline") return spec_baseline();
  if (name == "twin") return twin_predictor();
  if (name == "spec-baseline:one-shot") return one_shot(spec_baseline());
  if (name == "twin:one-shot") return one_shot(twin_predictor());
  if (name.rfind("llm:", 0) == 0)
    return std::make_unique<LlmPredictor>(parse_prompt_kind(name.substr(4)), c.chat, c.api_key,
                                          c.cache);
  throw Error(ErrorKind::InvalidArgument, fmt::format("unknown predictor '{}' (expected one of {})",
                                                      name, fmt::join(predictor_names(), ", ")));
}

}  // namespace regime::predict
