#include "plan/cap_grid.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/error.hpp"
#include "common/split.hpp"

namespace regime::plan {

namespace {
double round_tenth(double w) { return std::round(w * 10) / 10; }
// Two caps closer than this are the same setting (NVML resolution is 1 mW; users write watts).
constexpr double kSameCapW = 0.05;

std::vector<double> sorted_distinct_desc(std::vector<double> caps) {
  std::sort(caps.begin(), caps.end(), std::greater<>());
  caps.erase(std::unique(caps.begin(), caps.end(),
                         [](double a, double b) { return std::abs(a - b) < kSameCapW; }),
             caps.end());
  return caps;
}
}  // namespace

std::vector<double> auto_cap_grid(double default_limit_W, double min_limit_W,
                                  double step_fraction) {
  if (!(default_limit_W > 0) || !(step_fraction > 0) || min_limit_W > default_limit_W)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("cannot build a cap grid from default {} W, minimum {} W, step {}",
                            default_limit_W, min_limit_W, step_fraction));
  double step_W = default_limit_W * step_fraction;
  std::vector<double> caps;
  for (int i = 0;; ++i) {
    double cap = round_tenth(default_limit_W - i * step_W);
    if (cap < min_limit_W + kSameCapW) break;
    caps.push_back(cap);
  }
  caps.push_back(min_limit_W);
  return sorted_distinct_desc(caps);
}

CapList read_cap_list(const std::string& text) {
  CapList out;
  for (const std::string& item : split_fields(text, ',')) {
    double v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || !std::isfinite(v)) {
      out.bad_item = item;
      return out;
    }
    out.caps_W.push_back(v);
  }
  return out;
}

std::vector<double> parse_caps(const std::string& text, const GpuInfo& info) {
  if (text == "auto") return auto_cap_grid(info.default_limit_W, info.min_limit_W);
  const CapList list = read_cap_list(text);
  if (list.bad_item)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--caps '{}': '{}' is not a number of watts (expected 'auto' or a "
                            "list such as 250,225,200)",
                            text, *list.bad_item));
  for (double cap_W : list.caps_W) check_cap_in_range(info, cap_W, kSameCapW);
  return sorted_distinct_desc(list.caps_W);
}

std::vector<double> with_default(std::vector<double> caps, double default_limit_W) {
  caps.push_back(default_limit_W);
  return sorted_distinct_desc(caps);
}

}  // namespace regime::plan
