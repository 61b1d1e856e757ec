#pragma once
// Lists written as text with one separator ("a:b", "60,70"), split the same way everywhere.
#include <string>
#include <string_view>
#include <vector>

namespace regime {

// Every field of `text` between `sep`s, empty ones included: "a::b" -> {"a", "", "b"}, "" -> {""}.
std::vector<std::string> split_fields(std::string_view text, char sep);

}  // namespace regime
