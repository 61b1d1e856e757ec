#pragma once
// Reading an LLM's answer: the JSON object the prompt asks for, or a power stated in prose. Pure.
#include <optional>
#include <string>

namespace regime::predict {

struct LlmAnswer {
  double avg_power_W = 0;
  std::optional<std::string> regime;  // a known regime name, when it gave one
  std::string form;                   // "json" | "prose"
};

// Accepts, in this order:
//  - a JSON object (also inside a ```json fence or amid text) with a numeric "avg_power_W" (or
//    "power_W", "watts", a numeric string too) and optionally "regime";
//  - a bare number ("230"), the only number stated with a watt unit ("about 230 W", "230 watts"),
//    or a range of two such ("200-250 W", "between 200 and 250 watts": the middle).
// Anything else, an answer over 4096 characters and a power that is not in (0, 5000] W, is refused:
// Error Parse quoting the start of the answer.
LlmAnswer parse_llm_answer(const std::string& content);

// The regime name for a word an LLM may use ("power-limited" -> "cap-bound"); empty if unknown.
std::string normalize_regime(const std::string& word);

}  // namespace regime::predict
