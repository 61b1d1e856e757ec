#include "session/settings.hpp"

#include <fmt/core.h>

#include <limits>

#include "common/error.hpp"
#include "device/device_list.hpp"
#include "plan/cap_grid.hpp"
#include "session/job_devices.hpp"

namespace regime::session {

DeviceSet parse_device_set(const std::string& text) {
  if (text == "nvml:job") return {text, {}};
  // One device with a scheme and no list around it: device_list.hpp would accept it as it is.
  if (text.find(':') != std::string::npos &&
      (text.find(',') == std::string::npos || text.rfind("replay:", 0) == 0))
    return one_device(parse_device_uri(text));
  DeviceSet set{text, {}};
  for (const std::string& uri : split_device_list(text))
    set.devices.push_back(parse_device_uri(uri));
  return set;
}

DeviceSet resolve_job_devices(const DeviceSet& set, const WorkloadSpec& spec) {
  if (!set.command_gpus()) return set;
  return parse_device_set(resolve_job_device(set.text, spec));
}

Target open_target(const std::string& uri) { return open_target(parse_device_uri(uri)); }

std::vector<Target> open_targets(const std::string& device_list) {
  return open_targets(parse_device_set(device_list));
}

bool names_several(const std::string& device_list) {
  return names_several(parse_device_set(device_list));
}

bool on_simulated_clock(const std::string& device_list) {
  return parse_device_set(device_list).simulated();
}

std::string to_string(SweepMode mode) { return mode == SweepMode::Restart ? "restart" : "live"; }

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
  return caps.list_W;
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

}  // namespace regime::session
