#include "common/plain_number.hpp"

#include <charconv>
#include <string>

namespace regime {

std::optional<double> plain_number(std::string_view s) {
  if (s.empty() || s.size() > 30) return std::nullopt;
  int digits = 0, points = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9')
      ++digits;
    else if (c == '.')
      ++points;
    else
      return std::nullopt;
  }
  if (digits == 0 || points > 1) return std::nullopt;
  return std::stod(std::string(s));
}

std::optional<int> plain_index(std::string_view s) {
  int v = 0;
  if (s.empty() || s.size() > 4) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace regime
