#include "common/json_text.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime {

namespace {

// The DOM builder with the position of the first error kept (nlohmann passes it to the SAX
// handler, but its own parser drops it for errors that are not syntax errors, such as 1e999).
class PositionedDom : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  explicit PositionedDom(nlohmann::json& j)
      : nlohmann::detail::json_sax_dom_parser<nlohmann::json>(j, false) {}
  template <class Exception>
  bool parse_error(std::size_t position, const std::string&, const Exception& ex) {
    if (!failed) {
      failed = true;
      offset = position;
      what = ex.what();
    }
    return false;
  }
  bool failed = false;
  size_t offset = 0;
  std::string what;
};

// "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..." ->
// "syntax error ...": the position is given in our own form.
std::string plain_message(std::string what) {
  if (auto close = what.find("] "); what.rfind("[json.exception.", 0) == 0 && close != what.npos)
    what.erase(0, close + 2);
  if (what.rfind("parse error at line ", 0) == 0)
    if (auto colon = what.find(": "); colon != what.npos) what.erase(0, colon + 2);
  return what;
}

}  // namespace

std::string line_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}", line, column);
}

size_t json_nesting_depth(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json parse_json_or_discarded(std::string_view text) {
  if (json_nesting_depth(text) > kMaxJsonDepth) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(text, nullptr, false);
}

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(ErrorKind::Parse,
                fmt::format("{}: nested deeper than {} levels of arrays and objects", source,
                            kMaxJsonDepth));
  nlohmann::json j;
  PositionedDom sax(j);
  bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || sax.failed) {
    // The position nlohmann reports is one past the last byte read.
    size_t at = sax.offset > 0 ? sax.offset - 1 : 0;
    throw Error(ErrorKind::Parse,
                fmt::format("{}:{}: {}", source, line_column(text, at), plain_message(sax.what)));
  }
  return j;
}

double json_number(const nlohmann::json& j, const char* key, const std::string& where, double min,
                   double max) {
  if (!j.is_object() || !j.contains(key))
    throw Error(ErrorKind::Parse, fmt::format("{}: \"{}\" is missing", where, key));
  const nlohmann::json& v = j.at(key);
  if (!v.is_number())
    throw Error(ErrorKind::Parse, fmt::format("{}: \"{}\" is not a number", where, key));
  double d = v.get<double>();
  if (!std::isfinite(d) || d < min || d > max)
    throw Error(ErrorKind::Parse,
                fmt::format("{}: \"{}\" is {:g}, outside {:g} to {:g}", where, key, d, min, max));
  return d;
}

int64_t json_integer(const nlohmann::json& j, const char* key, const std::string& where,
                     int64_t min, int64_t max) {
  if (!j.is_object() || !j.contains(key))
    throw Error(ErrorKind::Parse, fmt::format("{}: \"{}\" is missing", where, key));
  const nlohmann::json& v = j.at(key);
  int64_t out = 0;
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(max))
      throw Error(ErrorKind::Parse,
                  fmt::format("{}: \"{}\" is {}, outside {} to {}", where, key, u, min, max));
    out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
  } else if (v.is_number()) {
    throw Error(ErrorKind::Parse,
                fmt::format("{}: \"{}\" is {}, not a whole number", where, key, v.dump()));
  } else {
    throw Error(ErrorKind::Parse, fmt::format("{}: \"{}\" is not a number", where, key));
  }
  if (out < min || out > max)
    throw Error(ErrorKind::Parse,
                fmt::format("{}: \"{}\" is {}, outside {} to {}", where, key, out, min, max));
  return out;
}

}  // namespace regime
