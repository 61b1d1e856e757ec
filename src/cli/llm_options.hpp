#pragma once
// The options of an LLM predictor, shared by `regime predict` and `regime sweep --prior`. The
// API key is read from REGIME_LLM_API_KEY or OPENAI_API_KEY only: no option takes it, so it never
// shows in a process list or a shell history.
#include <CLI/CLI.hpp>

#include "session/predict/predict.hpp"

namespace regime::cli {

// --endpoint, --model, --ca-file, --timeout-s, --retries, --no-cache.
void add_llm_options(CLI::App* sub, session::LlmSettings& s);

}  // namespace regime::cli
