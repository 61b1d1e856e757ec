#pragma once
// Numbers as a scheduler writes them, read strictly: no sign, exponent, hex, inf or nan, so that
// a value a person mistyped is refused rather than read as something else.
#include <optional>
#include <string_view>

namespace regime {

// Digits with at most one point ("262.5"); nullopt for anything else or more than 30 characters.
std::optional<double> plain_number(std::string_view s);
// A non-negative integer of at most 4 digits ("12"); nullopt for anything else.
std::optional<int> plain_index(std::string_view s);

}  // namespace regime
