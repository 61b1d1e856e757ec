#pragma once
// JSON files read by Regime (journals, GPU specs): parse errors name the file, line and column,
// numbers too large for a double (1e999) included, and numbers are checked before they are
// converted, so that no input can make a float-to-int conversion overflow.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace regime {

// How deeply JSON read from outside may nest. Every JSON Regime writes nests a few levels; the
// bound keeps recursive walks over a value (dump, comparisons, destruction) off the end of the
// stack when a file, a stored row or a peer sends thousands of nested brackets.
inline constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, counted outside strings, stopping once it
// passes `limit` (so a hostile text costs one pass and no memory).
size_t json_nesting_depth(std::string_view text, size_t limit = kMaxJsonDepth);

// Parses `text`. Error Parse "SOURCE:LINE:COLUMN: what is wrong" when it is not JSON, holds a
// number that does not fit a double, or nests deeper than kMaxJsonDepth.
nlohmann::json parse_json(std::string_view text, const std::string& source);

// `text` as JSON, or a discarded value where it is not JSON or nests deeper than kMaxJsonDepth:
// for stored rows, peers' messages and answers, where a bad value is a reason, not an error.
nlohmann::json parse_json_or_discarded(std::string_view text);

// "LINE:COLUMN" (1-based) of byte `offset` in `text`.
std::string line_column(std::string_view text, size_t offset);

// j[key] as a finite number within [min, max]. Error Parse "WHERE: KEY ..." when it is missing,
// not a number, or out of range. `where` names the file and the entry.
double json_number(const nlohmann::json& j, const char* key, const std::string& where, double min,
                   double max);
// j[key] as a whole number within [min, max] (1.5 and 1e20 are refused, not converted).
int64_t json_integer(const nlohmann::json& j, const char* key, const std::string& where,
                     int64_t min, int64_t max);

}  // namespace regime
