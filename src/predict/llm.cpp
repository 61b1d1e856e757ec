#include "predict/llm.hpp"

#include <fmt/format.h>

#include <algorithm>
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

std::vector<ChatMessage> LlmPredictor::prompt(const PredictQuery& query) const {
  return prompt_for(kind_, query);
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

namespace {

bool is_family(const PredictorEntry& e) { return !e.name.empty() && e.name.back() == ':'; }

}  // namespace

// The predictors by name, in the order their list names them: adding one is one row here.
const std::vector<PredictorEntry>& predictor_table() {
  static const std::vector<PredictorEntry> kPredictors = {
      {"spec-baseline",
       {},
       "the nameplate rule: a training job draws the default limit and is held by it",
       [](const std::string&, const PredictorConfig&) { return spec_baseline(); },
       false},
      {"twin",
       {},
       "the twin's steady state at the default limit for the workload's built-in profile",
       [](const std::string&, const PredictorConfig&) { return twin_predictor(); },
       false},
      {"spec-baseline:one-shot",
       {},
       "spec-baseline calibrated on one measured workload of the same GPU",
       [](const std::string&, const PredictorConfig&) { return one_shot(spec_baseline()); },
       false},
      {"twin:one-shot",
       {},
       "twin calibrated on one measured workload of the same GPU",
       [](const std::string&, const PredictorConfig&) { return one_shot(twin_predictor()); },
       false},
      {"llm:",
       {"zero-shot", "spec", "one-shot"},
       "the study's prompt of that kind sent to a chat-completions service, answers cached",
       [](const std::string& rest, const PredictorConfig& c) -> std::unique_ptr<Predictor> {
         return std::make_unique<LlmPredictor>(parse_prompt_kind(rest), c.chat, c.api_key, c.cache);
       },
       true},
  };
  return kPredictors;
}

const std::vector<std::string>& predictor_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : predictor_table()) {
      if (!is_family(e)) out.emplace_back(e.name);
      for (const auto& v : e.variants) out.push_back(std::string(e.name) + std::string(v));
    }
    return out;
  }();
  return names;
}

PredictorChoice choose_predictor(const std::string& name) {
  for (const auto& e : predictor_table()) {
    if (!(is_family(e) ? name.starts_with(e.name) : name == e.name)) continue;
    const std::string rest = name.substr(is_family(e) ? e.name.size() : name.size());
    // A family's variant is checked here, where the name is read, not when it is made.
    if (is_family(e) && std::find(e.variants.begin(), e.variants.end(), rest) == e.variants.end())
      break;
    return {name, &e, rest};
  }
  throw Error(ErrorKind::InvalidArgument, fmt::format("unknown predictor '{}' (expected one of {})",
                                                      name, fmt::join(predictor_names(), ", ")));
}

std::unique_ptr<Predictor> make_predictor(const PredictorChoice& choice, const PredictorConfig& c) {
  return choice.entry->make(choice.rest, c);
}

std::unique_ptr<Predictor> make_predictor(const std::string& name, const PredictorConfig& c) {
  return make_predictor(choose_predictor(name), c);
}

}  // namespace regime::predict
