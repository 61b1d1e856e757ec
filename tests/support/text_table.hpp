#pragma once
// Reads a printed table back in tests: the blank-separated cells of the row whose first cell is
// `first` (empty when there is none). Header-only.
#include <sstream>
#include <string>
#include <vector>

namespace regime::test {

inline std::vector<std::string> row_cells(const std::string& text, const std::string& first) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::vector<std::string> out;
    std::string c;
    while (cells >> c) out.push_back(c);
    if (!out.empty() && out.front() == first) return out;
  }
  return {};
}

}  // namespace regime::test
