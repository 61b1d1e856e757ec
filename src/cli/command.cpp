#include "cli/command.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>

namespace regime::cli {

CLI::Validator number_in(double min, double max, bool min_exclusive,
                         const std::string& hidden_name) {
  std::string range = fmt::format("{}{:g} to {:g}", min_exclusive ? "above " : "", min, max);
  std::string who = hidden_name.empty() ? "" : hidden_name + ": ";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0') return fmt::format("{}'{}' is not a number", who, text);
        if (!std::isfinite(v) || errno == ERANGE)
          return fmt::format("{}{} is not a finite number: give {}", who, text, range);
        if (v < min || (min_exclusive && v == min) || v > max)
          return fmt::format("{}{} is out of range: give {}", who, text, range);
        return "";
      },
      "NUMBER in " + range);
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "regime: " << w << "\n";
}

}  // namespace regime::cli
