#pragma once
// A probe measures one cap. Probers hide where the measurement comes from: a sweep table row
// (replay), one running workload whose cap changes between windows (live), or one run per cap
// (restart). Strategies only see this interface.
#include <string>
#include <vector>

#include "analysis/measurement.hpp"

namespace regime::plan {

struct ProbeResult {
  double cap_W = 0;
  Measurement measurement;
  std::string note;  // how the window was taken, when it matters ("not settled after 300 s")
};

// True when a probe's figures are per second (a window without step markers, accepted with
// --per-second): then every figure of the search is read per second.
bool any_per_second(const std::vector<ProbeResult>& probes);

class Prober {
 public:
  virtual ~Prober() = default;
  virtual ProbeResult probe(double cap_W) = 0;
};

// Results highest cap first.
std::vector<ProbeResult> by_cap_desc(std::vector<ProbeResult> probes);

}  // namespace regime::plan
