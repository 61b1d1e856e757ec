#include "cli/settings_options.hpp"

#include <fmt/core.h>

#include <limits>

#include "common/error.hpp"

namespace regime::cli {

session::DeviceSet parse_device_set(const std::string& text) {
  if (text == "nvml:job") return {text, {}};
  return {text, parse_device_list(text)};
}

session::CapsSpec parse_caps_spec(const std::string& text) {
  session::CapsSpec caps{text, {}};
  if (text == "auto") return caps;
  // The list's form only: every GPU's range is checked where the caps are set (caps_on).
  GpuInfo any;
  any.min_limit_W = -std::numeric_limits<double>::infinity();
  any.max_limit_W = std::numeric_limits<double>::infinity();
  caps.list_W = plan::parse_caps(text, any);
  return caps;
}

session::SweepSettings parse_sweep_settings(const SweepSettingsText& text,
                                            session::SweepSettings given) {
  given.strategy = plan::parse_strategy(text.strategy);
  given.objective = plan::parse_objective(text.objective);
  if (text.mode == "live")
    given.mode = session::SweepMode::Live;
  else if (text.mode == "restart")
    given.mode = session::SweepMode::Restart;
  else
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--mode '{}': expected live or restart", text.mode));
  if (!text.prior.empty()) given.prior = predict::choose_predictor(text.prior);
  if (!text.db.empty()) given.db = DatabaseLocation::from_text(text.db);
  return given;
}

}  // namespace regime::cli
