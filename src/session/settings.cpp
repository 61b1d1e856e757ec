#include "session/settings.hpp"

#include <fmt/core.h>

#include <limits>

#include "common/error.hpp"
#include "device/device_list.hpp"
#include "plan/cap_grid.hpp"
#include "session/site/command_gpus.hpp"

namespace regime::session {

DeviceSet parse_device_set(const std::string& text) {
  if (text == "nvml:job") return {text, {}};
  return {text, parse_device_list(text)};
}

Target open_target(const std::string& uri) { return open_target(parse_device_uri(uri)); }

std::vector<Target> open_targets(const std::string& device_list) {
  return open_targets(parse_device_set(device_list));
}

bool on_simulated_clock(const std::string& device_list) {
  return parse_device_set(device_list).simulated();
}

std::string sweep_mode_name(SweepMode mode) {
  return mode == SweepMode::Restart ? "restart" : "live";
}

namespace {
// Two caps closer than this are the same setting (plan/cap_grid.cpp).
constexpr double kSameCapW = 0.05;
}  // namespace

CapsSpec parse_caps_spec(const std::string& text) {
  CapsSpec caps{text, {}};
  if (text == "auto") return caps;
  // The list's form only: every GPU's range is checked where the caps are set (caps_on).
  GpuInfo any;
  any.min_limit_W = -std::numeric_limits<double>::infinity();
  any.max_limit_W = std::numeric_limits<double>::infinity();
  caps.list_W = plan::parse_caps(text, any);
  return caps;
}

std::vector<double> caps_on(const CapsSpec& caps, const GpuInfo& info) {
  if (caps.automatic()) return plan::auto_cap_grid(info.default_limit_W, info.min_limit_W);
  for (double cap_W : caps.list_W) check_cap_in_range(info, cap_W, kSameCapW);
  return plan::with_default(caps.list_W, info.default_limit_W);
}

SweepSettings parse_sweep_settings(const SweepSettingsText& text, SweepSettings given) {
  given.strategy = plan::parse_strategy(text.strategy);
  given.objective = plan::parse_objective(text.objective);
  if (text.mode == "live")
    given.mode = SweepMode::Live;
  else if (text.mode == "restart")
    given.mode = SweepMode::Restart;
  else
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--mode '{}': expected live or restart", text.mode));
  return given;
}

nlohmann::json settings_json(const SweepSettings& s, const std::string& caps) {
  return {{"caps", caps},
          {"strategy", plan::to_string(s.strategy)},
          {"objective", s.objective.text()},
          {"mode", sweep_mode_name(s.mode)},
          {"apply", s.apply},
          {"force", s.force},
          {"settle_s", s.budget.settle_s},
          {"max_settle_s", s.budget.max_settle_s},
          {"warmup_steps", s.budget.warmup_steps},
          {"target_rel_ci", s.budget.target_rel_ci},
          {"min_steps", s.budget.min_steps},
          {"max_steps", s.budget.max_steps},
          {"max_probe_s", s.budget.max_probe_s},
          {"per_second", s.budget.accept_per_second}};
}

}  // namespace regime::session
