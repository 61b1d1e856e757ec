#include "plan/probe.hpp"

namespace regime::plan {

bool any_per_second(const std::vector<ProbeResult>& probes) {
  for (const ProbeResult& p : probes)
    if (p.measurement.per_second) return true;
  return false;
}

}  // namespace regime::plan
