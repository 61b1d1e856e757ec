#include "session/study/study_view.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "analysis/measure.hpp"
#include "present/render.hpp"
#include "session/control/control_view.hpp"
#include "store/database_location.hpp"
#include "twin/spec.hpp"
#include "twin/uncertainty.hpp"

namespace regime::session {

StudyRow study_row(const StudyReport& rep) {
  StudyRow row;
  row.device = rep.device;
  row.gpu = rep.info.name;
  row.regime = to_string(rep.regime.regime);
  row.default_limit_W = rep.info.default_limit_W;
  row.controller_may_help = rep.plan.controller_may_help;
  std::optional<double> decided_W;
  if (rep.sweep) {
    // Against the default's level the decision used, as every view of it shows.
    const plan::DecisionView view = decision_view(*rep.sweep);
    for (const auto& p : plan::by_cap_desc(rep.sweep->outcome.probes))
      if (auto c = plan::change_vs_default(view, p))
        row.energy_vs_default_pct.push_back({p.cap_W, c->energy_pct});
    const plan::Decision& d = rep.sweep->outcome.decision;
    row.decision = d.keep_default ? "keep default" : fmt::format("{:g} W", d.cap_W);
    decided_W = d.keep_default ? rep.info.default_limit_W : d.cap_W;
  } else {
    row.decision = "no sweep";
  }
  if (rep.control.run && rep.control.run->evaluation) {
    const Evaluation& e = *rep.control.run->evaluation;
    row.controller_effect_pct = e.energy_change_pct;
    row.controller_effect_ci_pct = e.energy_change_ci_pct;
    row.controller_verdict = to_string(e.verdict);
  } else {
    // Kept out by the regime gate, or skipped (read-only, no --actuate, --apply).
    row.controller_verdict = rep.control.skipped.empty() ? "gated out" : "skipped";
  }
  if (rep.sim_model.empty()) {
    row.basis = "measured";
  } else {
    const twin::GpuSpec spec = twin::load_gpu_spec(rep.sim_model);
    const twin::Uncertainty u =
        twin::spec_uncertainty(spec, decided_W.value_or(rep.info.default_limit_W));
    row.basis = u.calibrated && !u.extrapolated ? "calibrated" : "predicted";
  }
  return row;
}

std::string format_study_table(const std::vector<StudyRow>& rows) {
  size_t caps_width = 36;
  for (const StudyRow& r : rows) {
    size_t w = 0;
    for (const auto& [cap, pct] : r.energy_vs_default_pct)
      w += fmt::format(", {:g}: {:+.1f}", cap, pct).size();
    caps_width = std::max(caps_width, w);
  }
  std::string out = fmt::format("{:<10} {:<14} {:<10} {:>9}  {:<{}} {:<13} {:<11} {}\n", "device",
                                "gpu", "regime", "default W", "energy/step vs default (W: dE %)",
                                caps_width, "decision", "basis", "controller (effect)");
  for (const StudyRow& r : rows) {
    std::string caps;
    for (const auto& [cap, pct] : r.energy_vs_default_pct)
      caps += fmt::format("{}{:g}: {:+.1f}", caps.empty() ? "" : ", ", cap, pct);
    if (caps.empty()) caps = "-";
    std::string controller = r.controller_may_help ? "may help" : "cannot help";
    controller += r.controller_effect_pct
                      ? fmt::format(": dE {:+.1f}% [{:+.1f}, {:+.1f}], {}",
                                    *r.controller_effect_pct, r.controller_effect_ci_pct.first,
                                    r.controller_effect_ci_pct.second, r.controller_verdict)
                      : fmt::format(" ({})", r.controller_verdict);
    out +=
        fmt::format("{:<10} {:<14} {:<10} {:>9g}  {:<{}} {:<13} {:<11} {}\n", r.device, r.gpu,
                    r.regime, r.default_limit_W, caps, caps_width, r.decision, r.basis, controller);
  }
  return out;
}
namespace {

nlohmann::json control_json(const StudyControl& c) {
  if (c.run) return to_json(*c.run);
  return {
      {"policy", "regime-gated"},
      {"engaged", false},
      {"reason", c.reason},
      {"skipped_reason", c.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.skipped)},
      {"command", c.command}};
}

}  // namespace

nlohmann::json to_json(const StudyReport& rep) {
  nlohmann::json sweep = nullptr;
  if (rep.sweep) {
    const plan::SearchOutcome& o = rep.sweep->outcome;
    nlohmann::json results = nlohmann::json::array();
    for (const auto& p : plan::by_cap_desc(o.probes)) results.push_back(plan::result_json(p));
    sweep = {{"strategy", plan::to_string(rep.sweep->strategy)},
             {"objective", rep.sweep->objective.text()},
             {"caps_planned_W", rep.plan.caps},
             {"probes", o.probes.size()},
             {"results", results},
             {"stop_reason", o.stop_reason}};
    if (!rep.sweep->curve.model.empty()) sweep["curve"] = plan::to_json(rep.sweep->curve);
  }
  auto or_null = [](bool present, const auto& v) {
    return present ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json job = nullptr;
  if (!rep.gpu_regimes.empty()) {
    nlohmann::json gpus = nlohmann::json::array();
    // Each GPU's whole classify report (its advice and evidence too), so that a kept study's
    // page draws every GPU as the study did.
    for (size_t i = 0; i < rep.gpu_regimes.size(); ++i) {
      nlohmann::json g = regime::to_json(rep.gpu_regimes[i]);
      g["device"] = rep.job_devices.at(i);
      if (i < rep.job_infos.size()) {
        g["gpu"] = rep.job_infos[i].name;
        g["uuid"] = rep.job_infos[i].uuid;
      }
      gpus.push_back(std::move(g));
    }
    job = {{"devices", rep.job_devices},
           {"gpus", gpus},
           {"regime_device", rep.job_devices.at(rep.regime_gpu)},
           {"measurement",
            rep.job_measurement ? regime::to_json(*rep.job_measurement) : nlohmann::json(nullptr)}};
  }
  if (rep.whole_run) {
    // The command's one run: its figures beside the job's GPUs (when it ran on several).
    if (job.is_null()) job = nlohmann::json::object();
    job.update(regime::to_json(*rep.whole_run));
    job["exit_status"] = or_null(rep.exit_status.has_value(), rep.exit_status.value_or(0));
    job["unfinished"] = or_null(!rep.unfinished.empty(), rep.unfinished);
  }
  return {{"device", rep.device},
          {"workload", rep.workload},
          {"stopped_command", rep.stopped_command},
          {"gpu", rep.gpu_regimes.empty()
                      ? rep.info.name
                      : fmt::format("{}x {}", rep.gpu_regimes.size(), rep.info.name)},
          {"job", job},
          {"probe",
           {{"seconds_asked", rep.probe_seconds},
            {"seconds_run", rep.probe_ran_s},
            {"still_heating", rep.still_heating},
            {"end_temp_slope_C_per_min", rep.end_temp_slope_C_per_min}}},
          {"warnings", rep.warnings},
          {"regime", to_json(rep.regime)},
          {"plan",
           {{"sweep", rep.plan.sweep},
            {"caps_W", rep.plan.caps},
            {"why", rep.plan.why},
            {"controller_may_help", rep.plan.controller_may_help}}},
          {"sweep", sweep},
          {"decision",
           rep.sweep ? plan::decision_json(rep.sweep->outcome.decision, decision_view(*rep.sweep))
                     : nlohmann::json(nullptr)},
          {"after", or_null(rep.sweep.has_value(), rep.sweep ? rep.sweep->after : "")},
          {"sweep_command", or_null(rep.plan.sweep, rep.sweep_command)},
          {"control", control_json(rep.control)},
          {"skipped_reason", or_null(!rep.skipped.empty(), rep.skipped)},
          {"stored_as", or_null(rep.sweep && rep.sweep->stored_id,
                                rep.sweep && rep.sweep->stored_id
                                    ? "sweep:" + std::to_string(*rep.sweep->stored_id)
                                    : std::string())}};
}

namespace {

std::string ci_text(double v, const Interval& ci, int digits) {
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", v, digits, ci.first, digits, ci.second, digits);
}

// The gated controller: why it stayed out, or its evaluation against no control.
void control_text(const StudyControl& c, std::string& out) {
  out += "\ncontrol (regime-gated, thermal inside): ";
  if (!c.run) {
    out += (c.skipped.empty() ? "not engaged: " + c.reason
                              : c.reason + "; not evaluated: " + c.skipped) +
           "\n";
    return;
  }
  const ControlReport& cr = *c.run;
  out += (cr.engaged ? "engaged: " : "not engaged: ") + cr.reason + "\n";
  if (!cr.evaluation) {
    out += "   evaluated by: " + c.command + "\n";
    return;
  }
  const Evaluation& ev = *cr.evaluation;
  out += fmt::format(
      "   {} interleaved windows of {:.0f} s on one run ({:.0f} s), baseline first and last; "
      "{} limit change(s)\n",
      ev.windows.size(), ev.window_s, cr.duration_s, cr.actions.size());
  for (const auto* arm : {&ev.baseline, &ev.controlled})
    out += fmt::format("   {:<11} energy per step {} J, time per step {} s\n",
                       arm == &ev.baseline ? "baseline:" : "controlled:",
                       ci_text(arm->energy_per_step_J, arm->energy_per_step_ci_J, 3),
                       ci_text(arm->time_per_step_s, arm->time_per_step_ci_s, 4));
  out += fmt::format(
      "   change: energy per step {:+.1f}% [{:+.1f}, {:+.1f}], time per step {:+.1f}% [{:+.1f}, "
      "{:+.1f}] (95% intervals)\n",
      ev.energy_change_pct, ev.energy_change_ci_pct.first, ev.energy_change_ci_pct.second,
      ev.time_change_pct, ev.time_change_ci_pct.first, ev.time_change_ci_pct.second);
  out += "   verdict: " + std::string(to_string(ev.verdict)) + "\n";
  out += "   evaluated by: " + c.command + "\n";
}

std::string part_text(const RunPart& p) {
  std::string out = fmt::format("{} steps, {:.1f} s, {:.0f} J", p.steps, p.seconds, p.energy_J);
  if (p.energy_per_step_J) out += fmt::format(" ({:.3f} J/step)", *p.energy_per_step_J);
  return out;
}

// The command's one run: every step and joule, the parts, and what the study saved on it.
void whole_run_text(const StudyReport& r, std::string& out) {
  if (r.stopped_command) {
    out += "\n--stop-after-decision: the command was stopped once the study had decided\n";
    return;
  }
  if (r.probe_command_ended && !r.sweep) {
    out += "\nthe command ended on its own during the probe: nothing was stopped\n";
    return;
  }
  if (!r.whole_run) return;
  const WholeRunFigures& f = *r.whole_run;
  out += fmt::format(
      "\nthe {} ran to its end{}: {}\n", r.sim_model.empty() ? "command" : "workload",
      r.exit_status ? fmt::format(" (exit status {})", *r.exit_status) : "", part_text(f.run));
  if (!r.unfinished.empty()) out += "   the study stopped short: " + r.unfinished + "\n";
  const auto line = [&out](const std::string& label, const RunPart& p) {
    out += fmt::format("   {:<28} {}\n", label, part_text(p));
  };
  line(fmt::format("probe at {:g} W:", r.info.enforced_limit_W), f.probe);
  if (f.profiling) line("caps tried:", *f.profiling);
  if (f.decided)
    line(f.cap_W ? fmt::format("under the decision, {:g} W:", *f.cap_W)
                 : std::string("at the starting limit:"),
         *f.decided);
  if (f.ran_at_reference)
    out += fmt::format(
        "   energy saved: none to claim: all of it ran at the {}, the limit the "
        "saving is reckoned against\n",
        f.saved_against);
  else if (f.saved_J)
    out += fmt::format(
        "   energy saved against running it all at the {}: {:.0f} J [{:.0f}, {:.0f}] "
        "95% CI ({:+.1f}%), the caps tried counted in\n",
        f.saved_against, *f.saved_J, f.saved_ci_J.first, f.saved_ci_J.second,
        f.run.energy_J > 0 ? 100.0 * *f.saved_J / (f.run.energy_J + *f.saved_J) : 0.0);
  if (f.profiling_extra_J && f.profiling_extra_s)
    out += fmt::format("   the caps tried cost {:+.0f} J and {:+.1f} s against the {}\n",
                       *f.profiling_extra_J, *f.profiling_extra_s, f.saved_against);
}

}  // namespace

std::string to_text(const StudyReport& r, const StudyRequest& request) {
  const std::string& out_dir = request.out_dir;
  std::string out;
  out += fmt::format("study of {} on {} ({}), limit {:g} W (default {:g} W)\n\n", r.workload,
                     r.device, r.info.name, r.info.enforced_limit_W, r.info.default_limit_W);
  out += fmt::format("1. probe at the current limit ({:g} s):\n", r.probe_seconds);
  if (!r.gpu_regimes.empty()) {
    // One job: each GPU's regime, then the most constrained GPU's report, which is the job's.
    out +=
        fmt::format("   one job on {} GPUs; each GPU on its own figures:\n", r.gpu_regimes.size());
    for (size_t i = 0; i < r.gpu_regimes.size(); ++i) {
      const RegimeReport& g = r.gpu_regimes[i];
      out += fmt::format("   {:<8} {} (confidence {:.2f}), {:.1f} W mean, {:.2f} J/step\n",
                         r.job_devices[i], to_string(g.regime), g.confidence,
                         g.measurement.avg_power_W, g.measurement.energy_per_step_J);
    }
    if (r.job_measurement)
      out += fmt::format(
          "   the job: energy per step {:.2f} J [{:.2f}, {:.2f}] summed over its GPUs; the most "
          "constrained GPU's regime is the job's:\n",
          r.job_measurement->energy_per_step_J, r.job_measurement->energy_per_step_ci_J.first,
          r.job_measurement->energy_per_step_ci_J.second);
  }
  out += format_report(r.regime) + "\n";
  if (!r.plan.sweep) {
    out += "2. no sweep: " + r.plan.why + "\n";
  } else {
    out += "2. sweep: " + r.plan.why + "\n";
    if (!r.sweep) {
      out += "   not run: " + r.skipped + "\n";
    } else {
      const plan::SearchOutcome& o = r.sweep->outcome;
      out += fmt::format("   strategy {}, objective {}, {} probe(s) of {} planned cap(s)\n",
                         plan::to_string(r.sweep->strategy), r.sweep->objective.text(),
                         o.probes.size(), r.plan.caps.size());
      if (!r.sweep->curve.model.empty()) out += "   curve: " + plan::to_text(r.sweep->curve) + "\n";
      out += results_text(*r.sweep);
      out += "   search: " + o.stop_reason + "\n\n";
      out += "3. " + decision_text(*r.sweep) + "\n";
      out += "4. " + r.sweep->after + "\n";
    }
  }
  whole_run_text(r, out);
  control_text(r.control, out);
  if (!out_dir.empty() && r.job_probe_traces.size() > 1)
    out += fmt::format(
        "\nwrote {}/probe-gpuN.trace.csv and probe-gpuN.steps.csv for each GPU (N = 0 to {}) and "
        "study.json\n",
        out_dir, r.job_probe_traces.size() - 1);
  else if (!out_dir.empty())
    out += fmt::format("\nwrote {}/probe.trace.csv, probe.steps.csv and study.json\n", out_dir);
  // The store it was kept in is named where it is not the default, so the command draws it.
  const DatabaseLocation& db = request.settings.db;
  if (r.store_failure)
    out += "\n" + store_failure_text(*r.store_failure) + "\n";
  else if (r.study_id)
    out += fmt::format(
        "\nkept as study:{}: `regime report study:{}{} -o study.html` draws it{}\n", *r.study_id,
        *r.study_id, db.is_default() ? "" : " --db " + db.path().string(),
        out_dir.empty() ? " (without its timeline: --out DIR keeps the probe trace)" : "");
  return out;
}

std::string to_text(const std::vector<StudyReport>& reports) {
  std::vector<StudyRow> rows;
  for (const StudyReport& r : reports) rows.push_back(study_row(r));
  std::string out = format_study_table(rows);
  for (const StudyReport& r : reports)
    if (r.store_failure) out += r.device + ": " + store_failure_text(*r.store_failure) + "\n";
  return out;
}

nlohmann::json to_json(const std::vector<StudyReport>& reports) {
  nlohmann::json all = nlohmann::json::array();
  for (const StudyReport& r : reports) {
    nlohmann::json j = r.json;
    j["basis"] = study_row(r).basis;
    all.push_back(j);
  }
  return all;
}

}  // namespace regime::session
