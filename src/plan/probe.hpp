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

class Prober {
 public:
  virtual ~Prober() = default;
  virtual ProbeResult probe(double cap_W) = 0;
};

}  // namespace regime::plan
