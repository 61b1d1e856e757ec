#pragma once
// The presenters of `regime predict` and `regime predict eval`: the JSON and the text of each
// report, both built from the same report.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace regime::session {

struct PredictReport;
struct EvalReport;

// The prediction's figures (null where the predictor has none) and its note; with --show-prompt
// {"messages": [{"role", "content"}, ...]}, the chat that would be sent.
nlohmann::json to_json(const PredictReport& report);

// The prediction in words, marked as a prediction; with --show-prompt each message under its
// role.
std::string to_text(const PredictReport& report);

// {"rows", "cases", "llm_requests", "llm_cache_hits"}: each row a GPU (and family) and predictor
// with its error and regime accuracy.
nlohmann::json to_json(const EvalReport& report);

// The scores as a table, one row per GPU (and family, with by_family) and predictor, a legend,
// and what the LLM was asked.
std::string to_text(const EvalReport& report, bool by_family);

// The cases no predictor could answer, one line each for stderr: the first few, then how many
// more (with --examples all one case without a profile repeats a lot).
std::vector<std::string> skipped_lines(const EvalReport& report);

}  // namespace regime::session
