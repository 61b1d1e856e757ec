#include "twin/holdout.hpp"

#include <cstdint>

namespace regime::twin {

bool is_held_out(const std::string& gpu, const std::string& workload) {
  uint64_t h = 14695981039346656037ull;
  for (char c : gpu + "/" + workload) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return (h & 1u) != 0;
}

GpuSpec spec_scaled_to(const GpuSpec& other, double min_limit_W, double max_limit_W) {
  GpuSpec s = other;
  const double k = max_limit_W / other.max_limit_W;
  s.min_limit_W = min_limit_W;
  s.max_limit_W = max_limit_W;
  s.default_limit_W = max_limit_W;
  for (double* watts : {&s.idle_power_W, &s.base_power_W, &s.leakage_power_W, &s.dynamic_power_W,
                        &s.memory_power_W})
    *watts *= k;
  for (const char* name : {"idle_power_W", "base_power_W", "leakage_power_W", "static_power_W",
                           "dynamic_power_W", "memory_power_W"}) {
    auto it = s.bounds.find(name);
    if (it == s.bounds.end()) continue;
    it->second.first *= k;
    it->second.second *= k;
  }
  s.thermal_resistance_C_per_W /= k;  // the same temperatures at the scaled powers
  s.calibrated_caps_W.clear();
  s.calibration_error_pct = 0;
  s.calibration.clear();
  return s;
}

SweepSplit split_rows(const std::vector<SweepRow>& rows) {
  SweepSplit s;
  for (const auto& r : rows) (is_held_out(r.gpu, r.workload) ? s.held_out : s.seen).push_back(r);
  return s;
}

}  // namespace regime::twin
