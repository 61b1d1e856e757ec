#include "predict/received_text.hpp"

#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>

namespace regime::predict {

namespace {

void replace_all(std::string& text, const std::string& what, const std::string& with) {
  if (what.empty() || text.find(what) == std::string::npos) return;
  std::string out;
  out.reserve(text.size());
  size_t from = 0;
  for (size_t at; (at = text.find(what, from)) != std::string::npos; from = at + what.size())
    out.append(text, from, at - from).append(with);
  out.append(text, from, std::string::npos);
  text = std::move(out);
}

bool is_token_char(char c) {
  return std::isspace(static_cast<unsigned char>(c)) == 0 && c != '"' && c != '\'' && c != ',' &&
         c != ';' && c != '\\' && c != '<' && c != '>';
}

// "Bearer TOKEN" (any case, also "bearer: TOKEN", "Bearer=TOKEN") with the token cut out, the key's
// or another's (a proxy's, a previous request's). A scan, not std::regex: the text is a server's,
// up to max_response_bytes, and libstdc++'s regex recurses per character.
std::string redact_bearer_tokens(const std::string& text) {
  constexpr std::string_view kWord = "bearer";
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;  // text before this is in `out`
  for (size_t at = 0; at + kWord.size() <= text.size(); ++at) {
    bool word = at == 0 || std::isalnum(static_cast<unsigned char>(text[at - 1])) == 0;
    for (size_t i = 0; i < kWord.size() && word; ++i)
      word = std::tolower(static_cast<unsigned char>(text[at + i])) == kWord[i];
    if (!word) continue;
    size_t start = at + kWord.size();
    while (start < text.size() && (std::isspace(static_cast<unsigned char>(text[start])) != 0 ||
                                   text[start] == ':' || text[start] == '=' || text[start] == '"'))
      ++start;
    // "bearers" is a word, not a header; "[API key]" is cut already.
    if (start == at + kWord.size() || start == text.size() || text[start] == '[') continue;
    size_t end = start;
    while (end < text.size() && is_token_char(text[end])) ++end;
    if (end == start) continue;
    out.append(text, copied, start - copied);
    out += "[redacted]";
    copied = end;
    at = end - 1;
  }
  out.append(text, copied, std::string::npos);
  return out;
}

}  // namespace

std::string redact_secret(std::string text, const std::string& key) {
  if (!key.empty()) {
    replace_all(text, key, "[API key]");
    const std::string escaped = nlohmann::json(key).dump();  // as a JSON string echoes it
    replace_all(text, escaped.substr(1, escaped.size() - 2), "[API key]");
  }
  return redact_bearer_tokens(text);
}

std::string quote_received(const std::string& text, size_t max_chars) {
  std::string out = "'";
  size_t i = 0;
  for (; i < text.size() && i < max_chars; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  // Not half a UTF-8 character: drop continuation bytes and their lead at the cut.
  if (i < text.size()) {
    size_t end = out.size();
    while (end > 1 && (static_cast<unsigned char>(out[end - 1]) & 0xC0) == 0x80) --end;
    if (end > 1 && (static_cast<unsigned char>(out[end - 1]) & 0x80) != 0) --end;
    out.resize(end);
    out += "...";
  }
  return out + "'";
}

}  // namespace regime::predict
