#pragma once
// Names of enum values from one table each: the names in the order of the enumerators, so that a
// new value is one more name, not one more case in a switch.
#include <cstddef>
#include <string_view>

namespace regime {

// The name of `value`, whose enumerators count 0, 1, 2, ... in the order of `names`; `fallback`
// for a value past the table's end.
template <class E, std::size_t N>
constexpr std::string_view name_of(E value, const std::string_view (&names)[N],
                                   std::string_view fallback) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : fallback;
}

// Where `value` stands in `order`; N when it is not there.
template <class T, std::size_t N>
constexpr std::size_t position_in(const T (&order)[N], T value) {
  for (std::size_t i = 0; i < N; ++i)
    if (order[i] == value) return i;
  return N;
}

}  // namespace regime
