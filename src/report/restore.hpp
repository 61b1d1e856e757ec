#pragma once
// What a run did to the power limit, for the decision card: which limit was put back on which GPU
// and when, or that nothing was changed. Pure: the command's own account and the limits the
// trace recorded in, one line of text and its facts out.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace regime::report {

// A limit the command put back when it ended (the sweep of a study, a controller): as it said.
struct LimitRestored {
  std::string gpu;     // "NVIDIA H200 (GPU-...)" or the device
  double limit_W = 0;  // the original limit, put back
  std::string at_utc;  // when, ISO 8601
};

// {"changed", "restored" (true, false, or null when unknown), "gpu", "limit_W", "at_utc",
// "text"}. With `restored`, the line says what was put back. Without it, from `limit_W_seen` (the
// limit each sample recorded): one value throughout is "nothing was changed"; several are a
// change this page cannot account for, said as such, with `regime restore` as the way back.
nlohmann::json limit_restore_section(const std::optional<LimitRestored>& restored,
                                     const std::vector<double>& limit_W_seen,
                                     const std::string& gpu);

}  // namespace regime::report
