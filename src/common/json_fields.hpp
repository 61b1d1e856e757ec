#pragma once
// Fields of the JSON Regime writes, in the forms every report shares: a figure that may be
// missing is null, never 0 or absent; an interval is [low, high].
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

namespace regime {

// The value, or null where there is none.
template <class T>
nlohmann::json json_or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// [low, high].
inline nlohmann::json json_interval(const std::pair<double, double>& i) {
  return nlohmann::json::array({i.first, i.second});
}

}  // namespace regime
