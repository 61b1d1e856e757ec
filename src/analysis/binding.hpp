#pragma once
// Would a lower cap bind, and how often? Read from a live run: the power a limiter sees (mean
// power over short windows, Measurement::window_power_W, from the driver's 20 ms buffer where the
// device has one) and the clocks-event reason counters. A limiter holds each window's mean under
// its cap, so a cap c binds in the windows whose mean reaches c; a card already held at its limit
// (SW power cap counted for a share s of the window) binds at least that often at every lower cap.
// docs/analysis.md, "Binding evidence", gives the figures behind each constant.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/measurement.hpp"

namespace regime {

// A limiter holds its windows a little under the cap (the real H200 gemm, held at 700 W: 0.5 s
// windows average 690.6 W, 1.3% under), so a window within this fraction under a cap would be
// pulled down by it. Held windows scatter about that level, so at and under the limit a run ran
// under, the counted cap time is the better witness (live_binding takes the larger).
inline constexpr double kBindTolerance = 0.015;
// A cap that would bind in fewer windows than this changes too little to be worth a probe, and
// a difference measured there is not credited to it.
inline constexpr double kMinBindShare = 0.05;

struct CapBindShare {
  double cap_W = 0;
  double share = 0;  // estimated share of the time the cap would bind, 0..1
};

struct LiveBinding {
  bool available = false;  // the measurement has window power (or reason counters at its limit)
  std::string source;      // where the window power came from
  double window_s = 0;
  int windows = 0;
  std::optional<double> limit_W;                   // the limit the run ran under
  std::optional<double> counted_share_at_limit;    // SW power cap reason share, counted
  std::optional<double> predicted_share_at_limit;  // what the windows predict there (a check)
  std::vector<CapBindShare> caps;                  // for each cap asked about, highest first
  // The highest cap below the limit that would bind at least kMinBindShare of the time.
  std::optional<double> highest_binding_cap_W;
  std::string summary;  // one sentence with the numbers
};

// Share of the measurement's power windows whose mean reaches cap_W x (1 - kBindTolerance);
// nullopt without window power.
std::optional<double> window_bind_share(const Measurement& m, double cap_W);

// The evidence for each of `caps_W` (the run's own limit included or not). `limit_W` is the
// enforced limit of the run (default: the measurement's mean limit).
LiveBinding live_binding(const Measurement& m, const std::vector<double>& caps_W,
                         std::optional<double> limit_W = std::nullopt);

nlohmann::json to_json(const LiveBinding& b);

}  // namespace regime
