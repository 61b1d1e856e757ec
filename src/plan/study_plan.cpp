#include "plan/study_plan.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "analysis/binding.hpp"
#include "analysis/classify.hpp"
#include "common/shell.hpp"
#include "plan/cap_grid.hpp"
#include "plan/objective.hpp"

namespace regime::plan {

namespace {

std::vector<double> grid_from(double top_W, const GpuInfo& info) {
  return plan::with_default(plan::auto_cap_grid(top_W, info.min_limit_W), info.default_limit_W);
}

std::string caps_list(const std::vector<double>& caps) {
  std::string out;
  for (double c : caps) out += (out.empty() ? "" : ",") + fmt::format("{:g}", c);
  return out;
}

Change relative_change(double chosen, const Interval& chosen_ci, double base,
                       const Interval& base_ci) {
  Change c;
  if (base > 0) c.pct = 100.0 * (chosen / base - 1);
  bool intervals =
      chosen_ci.second > chosen_ci.first && base_ci.second > base_ci.first && base_ci.first > 0;
  // The ratio's extremes are at the corners: lowest chosen over highest base and vice versa.
  if (intervals)
    c.ci_pct = Interval{100.0 * (chosen_ci.first / base_ci.second - 1),
                        100.0 * (chosen_ci.second / base_ci.first - 1)};
  return c;
}

}  // namespace

SweepPlan plan_sweep(const RegimeReport& report, const GpuInfo& info) {
  const Measurement& m = report.measurement;
  double limit_W = info.enforced_limit_W > 0 ? info.enforced_limit_W : info.default_limit_W;
  SweepPlan p;
  switch (report.regime) {
    case Regime::CapBound:
      p.sweep = true;
      p.caps = grid_from(limit_W, info);
      p.why = fmt::format(
          "cap-bound: the firmware already holds power at the {:g} W limit ({:.1f} W drawn); "
          "sweeping down from the limit to find where energy per step turns up",
          limit_W, m.avg_power_W);
      break;
    case Regime::ThermalBound:
      p.sweep = true;
      p.controller_may_help = true;
      p.caps = grid_from(limit_W, info);
      p.why = fmt::format(
          "thermal-bound (temperature up to {} C): a lower cap may stop the throttling; sweeping "
          "down from the {:g} W limit. A thermal controller (one that lowers the cap only "
          "while the GPU is hot) may help too",
          m.max_temp_C ? fmt::format("{:.0f}", *m.max_temp_C) : std::string("?"), limit_W);
      break;
    case Regime::Headroom: {
      const std::vector<double> grid = plan::auto_cap_grid(info.default_limit_W, info.min_limit_W);
      if (!m.window_power_W.empty()) {
        // Where a cap would bind, from the probe's power windows and reason counters.
        const LiveBinding lb = live_binding(m, grid, limit_W);
        for (const auto& c : lb.caps)
          if (c.share >= kMinBindShare && c.cap_W < info.default_limit_W) p.caps.push_back(c.cap_W);
        p.sweep = !p.caps.empty();
        p.caps = p.sweep ? plan::with_default(p.caps, info.default_limit_W) : p.caps;
        p.why = p.sweep ? fmt::format(
                              "headroom: the GPU draws {:.1f} W of the {:g} W limit at full "
                              "clocks; {}; sweeping from {:g} W down",
                              m.avg_power_W, limit_W, lb.summary, p.caps[1])
                        : fmt::format(
                              "headroom: the GPU draws {:.1f} W of the {:g} W limit and {}: no "
                              "cap binds, so there is nothing to sweep",
                              m.avg_power_W, limit_W, lb.summary);
        break;
      }
      p.sweep = true;
      if (m.energy_source == EnergySource::None) {
        // A draw of "0 W" would plan no cap at all; unknown, every cap may bind.
        p.caps = plan::with_default(grid, info.default_limit_W);
        p.why = fmt::format(
            "headroom at full clocks, but no energy or power reading covers the probe's window, "
            "so the draw is unknown; sweeping every cap down from the {:g} W limit",
            limit_W);
        break;
      }
      const double reach_W = m.avg_power_W * (1 + plan::kNoBindMargin);
      for (double c : grid)
        if (c < reach_W) p.caps.push_back(c);
      p.caps = plan::with_default(p.caps, info.default_limit_W);
      p.why = fmt::format(
          "headroom: the GPU draws {:.1f} W of the {:g} W limit at full clocks, so caps above "
          "about {:.0f} W cannot bind (no power windows to say more); sweeping from the observed "
          "draw downward",
          m.avg_power_W, limit_W, reach_W);
      break;
    }
    case Regime::Underutilized:
      p.why = fmt::format(
          "underutilized: the GPU is busy only {} of the time, so a power cap barely changes "
          "energy per step; the waste is in the gaps between kernels (input pipeline, batch "
          "size, host work), not in the power limit. No sweep",
          m.mean_util_pct ? fmt::format("{:.1f}%", *m.mean_util_pct) : std::string("part"));
      break;
    case Regime::Idle:
      p.why = fmt::format(
          "idle: no work ran on the GPU ({:.1f} W drawn); there is nothing to cap. Check that "
          "the workload uses this GPU. No sweep",
          m.avg_power_W);
      break;
  }
  return p;
}

std::string sweep_command(const SweepCommandInputs& in, const std::vector<double>& caps) {
  std::string out = fmt::format("regime sweep --device {} --caps {} --strategy {} --objective {}",
                                shell_quote(in.device), caps_list(caps), shell_quote(in.strategy),
                                shell_quote(in.objective));
  if (!in.workload.empty()) out += " --workload " + shell_quote(in.workload);
  if (!in.step_regex.empty()) out += " --step-regex " + shell_quote(in.step_regex);
  out += " --actuate";
  if (!in.command.empty()) {
    out += " -- " + command_line(in.command);
  }
  return out;
}

Change energy_change(const plan::ProbeResult& chosen, const plan::ProbeResult& at_default) {
  return relative_change(
      chosen.measurement.energy_per_step_J, chosen.measurement.energy_per_step_ci_J,
      at_default.measurement.energy_per_step_J, at_default.measurement.energy_per_step_ci_J);
}

Change time_change(const plan::ProbeResult& chosen, const plan::ProbeResult& at_default) {
  return relative_change(chosen.measurement.time_per_step_s, chosen.measurement.time_per_step_ci_s,
                         at_default.measurement.time_per_step_s,
                         at_default.measurement.time_per_step_ci_s);
}

}  // namespace regime::plan
