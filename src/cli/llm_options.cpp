#include "cli/llm_options.hpp"

#include "cli/command.hpp"

namespace regime::cli {

void add_llm_options(CLI::App* sub, session::LlmSettings& s) {
  sub->add_option("--endpoint", s.endpoint,
                  "OpenAI-compatible chat-completions URL for llm:* predictors, e.g. "
                  "https://api.openai.com/v1 or http://127.0.0.1:8080/v1 (llama.cpp, vLLM, "
                  "Ollama); the key comes from REGIME_LLM_API_KEY or OPENAI_API_KEY");
  sub->add_option("--model", s.model, "Model name sent to the endpoint (llm:* predictors)");
  sub->add_option("--ca-file", s.ca_file,
                  "PEM file of the CA(s) to trust for an https:// endpoint (default: the "
                  "system's)")
      ->check(CLI::ExistingFile);
  sub->add_option("--timeout-s", s.timeout_s,
                  "Seconds one attempt may take in all, from connecting to the last byte of the "
                  "answer (default 60)")
      ->check(number_in(0, 3600, true));
  sub->add_option("--retries", s.retries,
                  "Retries after an HTTP 429 or 5xx answer, with back-off that honours "
                  "Retry-After (default 3)")
      ->check(number_in(0, 20));
  sub->add_flag_callback(
      "--no-cache", [&s] { s.cache = false; },
      "Neither reuse nor keep LLM answers (by default they are kept in the run database, keyed "
      "by model and prompt)");
}

}  // namespace regime::cli
