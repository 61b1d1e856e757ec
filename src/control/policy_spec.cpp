#include "control/policy_spec.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime::control {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

}  // namespace

PolicySpec parse_policy(const std::string& text) {
  PolicySpec spec;
  spec.text = text;
  size_t colon = text.find(':');
  spec.name = trim(text.substr(0, colon));
  if (spec.name.empty())
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy '{}': expected NAME[:key=value,...]", text));
  if (colon == std::string::npos) return spec;
  std::string rest = text.substr(colon + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string item =
        trim(rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos || trim(item.substr(0, eq)).empty())
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--policy '{}': '{}' is not key=value", text, item));
    std::string key = trim(item.substr(0, eq));
    if (spec.params.count(key))
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--policy '{}': '{}' given twice", text, key));
    spec.params[key] = trim(item.substr(eq + 1));
  }
  return spec;
}

std::optional<double> number_param(const PolicySpec& spec, const std::string& key) {
  auto it = spec.params.find(key);
  if (it == spec.params.end()) return std::nullopt;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != it->second.size() || !std::isfinite(v))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy {}: {}='{}' is not a number", spec.name, key, it->second));
  return v;
}

void require_known_params(const PolicySpec& spec, const std::vector<std::string>& known) {
  for (const auto& [k, v] : spec.params)
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--policy {}: unknown parameter '{}' (known: {})", spec.name, k,
                              fmt::join(known, ", ")));
}

}  // namespace regime::control
