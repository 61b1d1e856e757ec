#include "session/control/control_view.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "analysis/measure.hpp"
#include "common/json_fields.hpp"
#include "session/control/control_types.hpp"

namespace regime::session {

namespace {

nlohmann::json arm_json(double e, const Interval& e_ci, double t, const Interval& t_ci) {
  return {{"energy_per_step_J", e},
          {"energy_per_step_ci_J", json_interval(e_ci)},
          {"time_per_step_s", t},
          {"time_per_step_ci_s", json_interval(t_ci)}};
}

nlohmann::json arm_json(const Measurement& m) {
  return arm_json(m.energy_per_step_J, m.energy_per_step_ci_J, m.time_per_step_s,
                  m.time_per_step_ci_s);
}

nlohmann::json arm_json(const ArmFigures& a) {
  return arm_json(a.energy_per_step_J, a.energy_per_step_ci_J, a.time_per_step_s,
                  a.time_per_step_ci_s);
}

// One limit the controller set or would have set: when, and the temperature and power behind it.
nlohmann::json action_json(const control::ControlAction& a) {
  return {{"t_s", a.t_s},
          {"temp_C", json_or_null(a.temp_C)},
          {"power_W", json_or_null(a.power_W)},
          {"why", a.why}};
}

// The limits the controller set.
nlohmann::json actions_json(const std::vector<control::ControlAction>& actions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : actions) {
    nlohmann::json j = action_json(a);
    j["old_limit_W"] = a.old_limit_W;
    j["limit_W"] = a.new_limit_W;
    j["applied"] = a.applied;
    out.push_back(std::move(j));
  }
  return out;
}

// A dry run's every decision, holds included: what it would have set, or null for a hold.
nlohmann::json decisions_json(const std::vector<control::ControlAction>& decisions) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : decisions) {
    nlohmann::json j = action_json(a);
    j["limit_W"] = a.old_limit_W;
    j["would_set_W"] =
        a.new_limit_W == a.old_limit_W ? nlohmann::json(nullptr) : nlohmann::json(a.new_limit_W);
    out.push_back(std::move(j));
  }
  return out;
}

// The evaluation's windows and how they were cut and judged: each window's figures as its
// measurement's JSON writes them.
nlohmann::json evaluation_json(const Evaluation& ev) {
  constexpr const char* kWindowFigures[] = {"steps",       "energy_per_step_J", "time_per_step_s",
                                            "avg_power_W", "mean_temp_C",       "max_temp_C",
                                            "mean_limit_W"};
  nlohmann::json ws = nlohmann::json::array();
  for (const auto& w : ev.windows) {
    const nlohmann::json m = to_json(w.measurement);
    nlohmann::json j = {
        {"arm", w.controlled ? "controlled" : "baseline"}, {"t0_s", w.t0_s}, {"t1_s", w.t1_s}};
    for (const char* key : kWindowFigures) j[key] = m.at(key);
    ws.push_back(std::move(j));
  }
  return {{"windows", ws},
          {"lead_in_s", ev.lead_in_s},
          {"window_s", ev.window_s},
          {"settle_s", ev.settle_s},
          {"dof", ev.dof},
          {"confidence", 0.95},
          {"energy_margin_pct", ev.rule.energy_margin_pct},
          {"time_margin_pct", ev.rule.time_margin_pct}};
}

// The figures judged: the whole run's without --evaluate; under it the two arms, the changes and
// the verdict, all null but the baseline (the whole run) where the controller stayed out.
void add_judged_figures(nlohmann::json& j, const ControlReport& r) {
  if (!r.evaluate) {
    j.update(arm_json(r.measurement));
    return;
  }
  if (!r.evaluation) {
    j["baseline"] = arm_json(r.measurement);
    for (const char* k : {"controlled", "energy_change_pct", "energy_change_ci_pct",
                          "time_change_pct", "time_change_ci_pct", "verdict", "evaluation"})
      j[k] = nullptr;
    return;
  }
  const Evaluation& ev = *r.evaluation;
  j["baseline"] = arm_json(ev.baseline);
  j["controlled"] = arm_json(ev.controlled);
  j["energy_change_pct"] = ev.energy_change_pct;
  j["energy_change_ci_pct"] = json_interval(ev.energy_change_ci_pct);
  j["time_change_pct"] = ev.time_change_pct;
  j["time_change_ci_pct"] = json_interval(ev.time_change_ci_pct);
  j["verdict"] = to_string(ev.verdict);
  j["evaluation"] = evaluation_json(ev);
}

// One GPU's run, or the job's figures, without the job's own extensions.
nlohmann::json run_json(const ControlReport& r) {
  nlohmann::json j = {
      {"device", r.device},
      {"gpu", r.info.name},
      {"uuid", r.info.uuid},
      {"workload", r.workload},
      {"policy", r.policy},
      {"engaged", r.engaged},
      {"reason", r.reason},
      {"dry_run", r.dry_run},
      {"dry_run_reason", r.dry_run ? nlohmann::json(r.dry_run_why) : nlohmann::json(nullptr)},
      {"probe_s", r.probe_s},
      {"regime", r.probe ? nlohmann::json(to_string(r.probe->regime)) : nullptr},
      {"probe", r.probe ? regime::to_json(*r.probe) : nlohmann::json(nullptr)},
      {r.controller, r.controller_params},
      {"actions", actions_json(r.actions)},
      {"decisions", decisions_json(r.decisions)},
      {"limit_before_W", r.limit_before_W},
      {"limit_after_W", r.limit_after_W},
      {"duration_s", r.duration_s},
      {"simulated", r.simulated},
      {"measurement", regime::to_json(r.measurement)}};
  add_judged_figures(j, r);
  return j;
}

}  // namespace

nlohmann::json to_json(const ControlReport& r) {
  nlohmann::json j = run_json(r);
  j["trace"] = r.trace;
  j["stored_as"] =
      r.stored_id ? nlohmann::json(fmt::format("control:{}", *r.stored_id)) : nlohmann::json();
  j["job_devices"] = r.usage;
  j["warnings"] = r.warnings;
  if (r.gpus.empty()) return j;
  nlohmann::json gpus = nlohmann::json::array();
  for (const ControlReport& g : r.gpus) gpus.push_back(run_json(g));
  j["gpus"] = gpus;
  j["gpu"] = fmt::format("{}x {}", r.gpus.size(), r.info.name);
  j["regime"] = r.job_regime ? nlohmann::json(to_string(*r.job_regime)) : nlohmann::json();
  j["spread"] = r.spread ? regime::to_json(*r.spread) : nlohmann::json();
  return j;
}
namespace {

std::string temp_text(const std::optional<double>& t) {
  return t ? fmt::format("{:.1f} C", *t) : std::string("- C");
}

std::string interval_text(double v, const Interval& ci, int digits) {
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", v, digits, ci.first, digits, ci.second, digits);
}

std::string pct_text(double v, const Interval& ci) {
  return fmt::format("{:+.1f}% [{:+.1f}, {:+.1f}]", v, ci.first, ci.second);
}

void evaluation_text(std::string& out, const Evaluation& ev) {
  auto to = std::back_inserter(out);
  fmt::format_to(
      to,
      "evaluation: after a {:.0f} s lead-in of control (not measured), {} interleaved windows of "
      "{:.0f} s (baseline first and last); the first {:.0f} s of each are dropped while the die "
      "settles\n",
      ev.lead_in_s, ev.windows.size(), ev.window_s, ev.settle_s);
  out +=
      "  window  arm          measured s   steps   energy/step J   time/step s   power W"
      "   temp C   limit W\n";
  for (size_t i = 0; i < ev.windows.size(); ++i) {
    const auto& w = ev.windows[i];
    const Measurement& m = w.measurement;
    fmt::format_to(to,
                   "  {:>6}  {:<11} {:>5.0f}-{:<5.0f} {:>7} {:>15.3f} {:>13.4f} {:>9.1f} "
                   "{:>8} {:>9}\n",
                   i + 1, w.controlled ? "controlled" : "baseline", w.t0_s, w.t1_s, m.steps,
                   m.energy_per_step_J, m.time_per_step_s, m.avg_power_W,
                   m.mean_temp_C ? fmt::format("{:.1f}", *m.mean_temp_C) : "-",
                   m.mean_limit_W ? fmt::format("{:.0f}", *m.mean_limit_W) : "-");
  }
  auto arm = [&](const char* name, const ArmFigures& a) {
    fmt::format_to(to,
                   "{:<11} energy per step {} J, time per step {} s ({} windows, {} "
                   "steps)\n",
                   name, interval_text(a.energy_per_step_J, a.energy_per_step_ci_J, 3),
                   interval_text(a.time_per_step_s, a.time_per_step_ci_s, 4), a.windows, a.steps);
  };
  arm("baseline:", ev.baseline);
  arm("controlled:", ev.controlled);
  fmt::format_to(to,
                 "change: energy per step {}, time per step {} (95% intervals, drift removed)\n",
                 pct_text(ev.energy_change_pct, ev.energy_change_ci_pct),
                 pct_text(ev.time_change_pct, ev.time_change_ci_pct));
  fmt::format_to(
      to,
      "verdict: {} (helps: the energy interval lies below -{:g}%; hurts: above +{:g}%, or the "
      "time interval above +{:g}% without an energy gain)\n",
      to_string(ev.verdict), ev.rule.energy_margin_pct, ev.rule.energy_margin_pct,
      ev.rule.time_margin_pct);
}

// The run's energy and time per step: the evaluation's windows and verdict, or the whole run.
void figures_text(std::string& out, const ControlReport& r) {
  if (r.evaluation) return evaluation_text(out, *r.evaluation);
  const Measurement& m = r.measurement;
  fmt::format_to(std::back_inserter(out),
                 "{}energy per step {:.3f} J [{:.3f}, {:.3f}], time per step {:.4f} s [{:.4f}, "
                 "{:.4f}] over {} steps ({:.0f}-{:.0f} s)\n",
                 r.evaluate ? "baseline (no control ran): " : "", m.energy_per_step_J,
                 m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second, m.time_per_step_s,
                 m.time_per_step_ci_s.first, m.time_per_step_ci_s.second, m.steps,
                 m.window_start_s - r.origin_s, m.window_end_s - r.origin_s);
}

void gpu_text(std::string& out, const ControlReport& r) {
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{} on {} ({}), {:.0f} s{}, policy {}{}\n", r.workload, r.device, r.info.name,
                 r.duration_s, r.simulated ? " simulated" : "", r.policy,
                 r.evaluate ? ", evaluated" : "");
  if (r.dry_run)
    out += "dry run: the controller decides and logs what it would set; nothing is set (" +
           r.dry_run_why + ")\n";
  if (r.probe)
    fmt::format_to(to, "probe ({:.0f} s): {} (confidence {:.2f})\n", r.probe_s,
                   to_string(r.probe->regime), r.probe->confidence);
  out += (r.engaged ? "engaged: " : "stayed out: ") + r.reason + "\n";
  if (r.engaged) out += r.controller + ": " + r.controller_text + "\n";
  if (r.dry_run && !r.decisions.empty()) {
    // Every decision, holds included: what the controller saw each period.
    out += "  each decision (at: the limit the controller would have in force by then):\n";
    for (const auto& a : r.decisions)
      fmt::format_to(to, "  t={:7.1f} s  {:>8}  {:6.1f} W  at {:.0f} W: {}  ({})\n", a.t_s,
                     temp_text(a.temp_C), a.power_W.value_or(0), a.old_limit_W,
                     a.new_limit_W == a.old_limit_W
                         ? std::string("hold")
                         : fmt::format("would set {:.0f} W", a.new_limit_W),
                     a.why);
  } else {
    for (const auto& a : r.actions)
      fmt::format_to(to, "  t={:7.1f} s  {:>8}  {:6.1f} W  {} {:.0f} -> {:.0f} W  ({})\n", a.t_s,
                     temp_text(a.temp_C), a.power_W.value_or(0), a.applied ? "limit" : "would set",
                     a.old_limit_W, a.new_limit_W, a.why);
  }
  if (r.engaged && r.actions.empty()) out += "  no change was needed\n";
  figures_text(out, r);
  const bool changed = std::any_of(r.actions.begin(), r.actions.end(),
                                   [](const control::ControlAction& a) { return a.applied; });
  fmt::format_to(to, "limit {:.0f} W before, {:.0f} W after ({})\n", r.limit_before_W,
                 r.limit_after_W, changed ? "restored" : "never changed");
}

}  // namespace

std::string to_text(const ControlReport& r) {
  std::string out;
  auto to = std::back_inserter(out);
  if (r.gpus.empty()) {
    gpu_text(out, r);
  } else {
    fmt::format_to(to, "{} on {}: one job on {} GPUs ({}), {:.0f} s, policy {}{}\n", r.workload,
                   r.device, r.gpus.size(), r.info.name, r.duration_s, r.policy,
                   r.evaluate ? ", evaluated" : "");
    for (const auto& w : r.warnings) out += w + "\n";
    for (const auto& g : r.gpus) {
      fmt::format_to(to, "--- {} ({}) ---\n", g.device, g.info.name);
      gpu_text(out, g);
    }
    out += "--- the job: energy summed over its GPUs, time per step from the shared steps ---\n";
    if (r.job_regime)
      fmt::format_to(to, "regime: {} (the most constrained GPU's)\n", to_string(*r.job_regime));
    figures_text(out, r);
    if (r.spread)
      fmt::format_to(to,
                     "spread between GPUs: energy per step {:.1f}% of the mean, mean power {:.1f} "
                     "W\n",
                     100 * r.spread->energy_rel, r.spread->power_W);
  }
  if (r.stored_id)
    fmt::format_to(to, "kept as control:{} (`regime runs show control:{}`)\n", *r.stored_id,
                   *r.stored_id);
  return out;
}

}  // namespace regime::session
