#include "cli/command.hpp"

#include <iostream>

namespace regime::cli {

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "regime: " << w << "\n";
}

}  // namespace regime::cli
