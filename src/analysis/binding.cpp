#include "analysis/binding.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "analysis/statistics.hpp"
#include "common/json_fields.hpp"
#include "trace/trace.hpp"

namespace regime {

std::optional<double> window_bind_share(const Measurement& m, double cap_W) {
  const auto& w = m.window_power_W;  // sorted ascending
  if (w.empty()) return std::nullopt;
  const double reach_W = cap_W * (1 - kBindTolerance);
  const auto below = std::lower_bound(w.begin(), w.end(), reach_W) - w.begin();
  return static_cast<double>(static_cast<std::ptrdiff_t>(w.size()) - below) /
         static_cast<double>(w.size());
}

LiveBinding live_binding(const Measurement& m, const std::vector<double>& caps_W,
                         std::optional<double> limit_W) {
  LiveBinding b;
  b.limit_W = limit_W ? limit_W : m.mean_limit_W;
  b.window_s = m.window_power_s;
  b.windows = static_cast<int>(m.window_power_W.size());
  b.source = m.window_power_source;
  if (auto it = m.reason_fraction.find(reason::kSwPowerCap); it != m.reason_fraction.end())
    b.counted_share_at_limit = it->second;
  else if (m.reasons_known || !m.reason_fraction.empty())
    b.counted_share_at_limit = 0.0;  // reasons were read and the cap bit never showed
  if (b.limit_W) b.predicted_share_at_limit = window_bind_share(m, *b.limit_W);
  b.available = !m.window_power_W.empty() || b.counted_share_at_limit.has_value();
  if (!b.available) {
    b.summary = "no window power and no reason counters: whether a cap binds is unknown";
    return b;
  }
  std::vector<double> caps = caps_W;
  std::sort(caps.begin(), caps.end(), std::greater<>());
  for (double cap : caps) {
    double share = window_bind_share(m, cap).value_or(0);
    // At or under the limit the run ran under, the counted cap time is a floor: a lower cap
    // binds at least whenever the higher one did.
    if (b.limit_W && cap <= *b.limit_W + 1e-9 && b.counted_share_at_limit)
      share = std::max(share, *b.counted_share_at_limit);
    b.caps.push_back({cap, share});
    if (!b.highest_binding_cap_W && share >= kMinBindShare && (!b.limit_W || cap < *b.limit_W))
      b.highest_binding_cap_W = cap;
  }
  std::string windows;
  if (!m.window_power_W.empty())
    windows = fmt::format("{} windows of {} s ({}): median {:.0f} W, p99 {:.0f} W, max {:.0f} W",
                          b.windows, b.window_s, b.source, percentile(m.window_power_W, 50),
                          percentile(m.window_power_W, 99), m.window_power_W.back());
  std::string counted;
  if (b.limit_W && b.counted_share_at_limit)
    counted = fmt::format(
        "SW power cap active {:.0f}% of the time at the {:.0f} W limit{}",
        100 * *b.counted_share_at_limit, *b.limit_W,
        b.predicted_share_at_limit
            ? fmt::format(" (the windows predict {:.0f}%)", 100 * *b.predicted_share_at_limit)
            : std::string());
  const std::string facts = windows.empty()   ? counted
                            : counted.empty() ? windows
                                              : windows + "; " + counted;
  if (b.highest_binding_cap_W) {
    double share = 0;
    for (const auto& c : b.caps)
      if (c.cap_W == *b.highest_binding_cap_W) share = c.share;
    b.summary = fmt::format("a cap of {} W would bind about {:.0f}% of the time ({})",
                            *b.highest_binding_cap_W, 100 * share, facts);
  } else {
    b.summary = fmt::format("no cap asked about would bind {:.0f}% of the time or more ({})",
                            100 * kMinBindShare, facts);
  }
  return b;
}

nlohmann::json to_json(const LiveBinding& b) {
  nlohmann::json caps = nlohmann::json::array();
  for (const auto& c : b.caps) caps.push_back({{"cap_W", c.cap_W}, {"share", c.share}});
  return {{"available", b.available},
          {"source", b.source},
          {"window_s", b.window_s},
          {"windows", b.windows},
          {"limit_W", json_or_null(b.limit_W)},
          {"counted_share_at_limit", json_or_null(b.counted_share_at_limit)},
          {"predicted_share_at_limit", json_or_null(b.predicted_share_at_limit)},
          {"caps", caps},
          {"highest_binding_cap_W", json_or_null(b.highest_binding_cap_W)},
          {"summary", b.summary}};
}

}  // namespace regime
