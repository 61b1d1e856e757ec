#include "plan/probe.hpp"

#include <algorithm>

namespace regime::plan {

bool any_per_second(const std::vector<ProbeResult>& probes) {
  for (const ProbeResult& p : probes)
    if (p.measurement.per_second) return true;
  return false;
}

std::vector<ProbeResult> by_cap_desc(std::vector<ProbeResult> probes) {
  std::stable_sort(probes.begin(), probes.end(),
                   [](const ProbeResult& a, const ProbeResult& b) { return a.cap_W > b.cap_W; });
  return probes;
}

}  // namespace regime::plan
