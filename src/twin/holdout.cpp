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

SweepSplit split_rows(const std::vector<SweepRow>& rows) {
  SweepSplit s;
  for (const auto& r : rows) (is_held_out(r.gpu, r.workload) ? s.held_out : s.seen).push_back(r);
  return s;
}

}  // namespace regime::twin
