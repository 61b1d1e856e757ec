#include "session/settings.hpp"

#include "plan/cap_grid.hpp"

namespace regime::session {

std::string sweep_mode_name(SweepMode mode) {
  return mode == SweepMode::Restart ? "restart" : "live";
}

namespace {
// Two caps closer than this are the same setting (plan/cap_grid.cpp).
constexpr double kSameCapW = 0.05;
}  // namespace

std::vector<double> caps_on(const CapsSpec& caps, const GpuInfo& info) {
  if (caps.automatic()) return plan::auto_cap_grid(info.default_limit_W, info.min_limit_W);
  for (double cap_W : caps.list_W) check_cap_in_range(info, cap_W, kSameCapW);
  return plan::with_default(caps.list_W, info.default_limit_W);
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
