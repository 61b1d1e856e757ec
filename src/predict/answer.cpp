#include "predict/answer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "predict/received_text.hpp"

namespace regime::predict {

namespace {

constexpr double kMaxPlausible_W = 5000;
// The prompt asks for one short JSON object; a longer answer is not one, and the regex engine
// (recursive) is kept away from a remote server's megabytes.
constexpr size_t kMaxAnswerChars = 4096;

// The answer is a server's text: quoted without control characters (no terminal escapes).
std::string quote(const std::string& content) { return quote_received(content); }

[[noreturn]] void refuse(const std::string& content, const std::string& why) {
  throw Error(ErrorKind::Parse, "the LLM's answer " + quote(content) + " " + why +
                                    " (expected {\"avg_power_W\": N, \"regime\": ...} or a power "
                                    "in watts)");
}

double checked(double w, const std::string& content) {
  if (!std::isfinite(w) || w <= 0 || w > kMaxPlausible_W)
    refuse(content,
           fmt::format("gives a power of {:g} W, outside (0, {:g}] W", w, kMaxPlausible_W));
  return w;
}

std::optional<double> number_in(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    static const std::regex num(R"(\s*([0-9]+(\.[0-9]+)?)\s*(w|watts?)?\s*)", std::regex::icase);
    std::smatch m;
    const std::string s = v.get<std::string>();
    if (std::regex_match(s, m, num)) return std::stod(m[1].str());
  }
  return std::nullopt;
}

std::optional<LlmAnswer> from_json(const std::string& content) {
  // The first '{' to the last '}': fences and a sentence around the object are tolerated.
  auto open = content.find('{');
  auto close = content.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  nlohmann::json j = parse_json_or_discarded(content.substr(open, close - open + 1));
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  for (const char* key : {"avg_power_W", "avg_power_w", "power_W", "power_w", "watts", "power"}) {
    if (!j.contains(key)) continue;
    auto w = number_in(j[key]);
    if (!w) refuse(content, std::string("has a non-numeric \"") + key + "\"");
    LlmAnswer a;
    a.avg_power_W = checked(*w, content);
    a.form = "json";
    if (j.contains("regime") && j["regime"].is_string()) {
      std::string r = normalize_regime(j["regime"].get<std::string>());
      if (!r.empty()) a.regime = r;
    }
    return a;
  }
  refuse(content, "is a JSON object without \"avg_power_W\"");
}

}  // namespace

std::string normalize_regime(const std::string& word) {
  std::string w;
  for (char c : word)
    w +=
        c == '_' || c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (w == "cap-bound" || w == "power-limited" || w == "power-bound" || w == "cap-limited" ||
      w == "power-cap-bound")
    return "cap-bound";
  if (w == "thermal-bound" || w == "thermal-limited") return "thermal-bound";
  if (w == "headroom") return "headroom";
  if (w == "underutilized" || w == "under-utilized" || w == "underutilised") return "underutilized";
  if (w == "idle") return "idle";
  return "";
}

LlmAnswer parse_llm_answer(const std::string& content) {
  if (content.size() > kMaxAnswerChars)
    refuse(content, fmt::format("is {} characters long, more than the {} a power needs",
                                content.size(), kMaxAnswerChars));
  if (auto a = from_json(content)) return *a;
  LlmAnswer a;
  a.form = "prose";
  static const std::regex bare(R"(\s*([0-9]+(\.[0-9]+)?)\s*\.?\s*)");
  std::smatch m;
  if (std::regex_match(content, m, bare)) {
    a.avg_power_W = checked(std::stod(m[1].str()), content);
    return a;
  }
  // A range first ("200-250 W", "200 to 250 watts", "between 200 and 250 W"), then single powers.
  static const std::regex range(
      R"(([0-9]+(\.[0-9]+)?)\s*(w|watts?)?\s*(-|–|to|and)\s*([0-9]+(\.[0-9]+)?)\s*(w\b|watts?\b))",
      std::regex::icase);
  static const std::regex watt(R"(([0-9]+(\.[0-9]+)?)\s*(w\b|watts?\b))", std::regex::icase);
  std::vector<double> ranges, powers;
  for (auto it = std::sregex_iterator(content.begin(), content.end(), range);
       it != std::sregex_iterator(); ++it)
    ranges.push_back((std::stod((*it)[1].str()) + std::stod((*it)[5].str())) / 2);
  for (auto it = std::sregex_iterator(content.begin(), content.end(), watt);
       it != std::sregex_iterator(); ++it)
    powers.push_back(std::stod((*it)[1].str()));
  if (ranges.size() == 1 && powers.size() <= 2) {
    a.avg_power_W = checked(ranges.front(), content);
    return a;
  }
  if (ranges.empty() && powers.size() == 1) {
    a.avg_power_W = checked(powers.front(), content);
    return a;
  }
  if (powers.empty()) refuse(content, "states no power in watts");
  refuse(content,
         fmt::format("states {} powers; which one is the prediction is not clear", powers.size()));
}

}  // namespace regime::predict
