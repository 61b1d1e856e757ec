#include "report/restore.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace regime::report {

nlohmann::json limit_restore_section(const std::optional<LimitRestored>& restored,
                                     const std::vector<double>& limit_W_seen,
                                     const std::string& gpu) {
  using nlohmann::json;
  if (restored)
    return {{"changed", true},
            {"restored", true},
            {"gpu", restored->gpu},
            {"limit_W", restored->limit_W},
            {"at_utc", restored->at_utc},
            {"text", fmt::format("Restored: the original power limit {:g} W on {} at {}.",
                                 restored->limit_W, restored->gpu, restored->at_utc)}};
  if (limit_W_seen.empty())
    return {{"changed", nullptr},
            {"restored", nullptr},
            {"gpu", gpu},
            {"limit_W", nullptr},
            {"at_utc", nullptr},
            {"text", fmt::format("The trace recorded no power limit of {}: this run changed "
                                 "none, and nothing was restored.",
                                 gpu)}};
  const auto [lo, hi] = std::minmax_element(limit_W_seen.begin(), limit_W_seen.end());
  if (*lo == *hi)
    return {{"changed", false},
            {"restored", false},
            {"gpu", gpu},
            {"limit_W", *lo},
            {"at_utc", nullptr},
            {"text", fmt::format("Nothing to restore: the power limit of {} stayed at {:g} W "
                                 "throughout; no limit was changed.",
                                 gpu, *lo)}};
  return {{"changed", true},
          {"restored", nullptr},
          {"gpu", gpu},
          {"limit_W", limit_W_seen.front()},
          {"at_utc", nullptr},
          {"text", fmt::format("The power limit of {} changed during the run ({:g} to {:g} W, "
                               "{:g} W at the start) and this page has no record of it being "
                               "put back: `regime restore` puts back any limit Regime changed.",
                               gpu, *lo, *hi, limit_W_seen.front())}};
}

}  // namespace regime::report
