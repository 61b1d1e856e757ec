#include "session/study/study_control.hpp"

#include <fmt/core.h>

#include "session/control/control.hpp"
#include "session/control/control_steps.hpp"
#include "session/study/study_steps.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace {

// Long enough for the gated controller's probe, a lead-in and the default windows, each of twice
// the settling time (ControlRequest::windows): 60 + 8 * 6 time constants.
double auto_control_seconds(const std::optional<twin::GpuSpec>& spec) {
  const double tau_s = spec ? spec->thermal_time_constant_s : 30;
  const int windows = ControlRequest{}.windows;
  return 60 + (windows + 1) * 6 * tau_s;
}

std::string control_command(const StudyRequest& r, double seconds) {
  std::string cmd =
      fmt::format("regime control --device {} --policy regime-gated --evaluate --seconds {:g}",
                  r.device.text, seconds);
  if (!r.workload.builtin.empty()) return cmd + " --workload " + r.workload.builtin;
  if (r.workload.step_regex) cmd += " --step-regex '" + *r.workload.step_regex + "'";
  cmd += " --actuate --";
  for (const auto& a : r.workload.command) cmd += " " + a;
  return cmd;
}

}  // namespace

// The gate decides from the study's own probe; only a pair it would let in is evaluated, by the
// gated controller itself (which probes again, on its own run).

void study_control(const StudyRequest& r, const RunSite& site, const ActuationPolicy& policy,
                   StudyReport& rep) {
  StudyControl& c = rep.control;
  const double seconds =
      r.control_seconds > 0 ? r.control_seconds : auto_control_seconds(site.spec);
  c.command = control_command(r, seconds);
  c.reason = gate_reason(rep.regime, rep.info);
  if (!c.reason.empty()) return;
  if (rep.whole_run) {
    // The evaluation interleaves windows with and without the controller over a run of its own.
    c.skipped =
        "the command ran to its end under the study's decision, and the evaluation needs a run "
        "of its own. To evaluate the controller, run: " +
        c.command;
  } else if (!r.control) {
    c.skipped = "--no-control was given. To evaluate the controller, run: " + c.command;
  } else if (r.settings.apply) {
    // The evaluation's baseline is the limit it finds: with --apply that would be the chosen cap.
    c.skipped =
        "--apply leaves the chosen cap set, and the evaluation compares against the "
        "original limit. To evaluate, run `regime restore`, then: " +
        c.command;
  } else if (policy.read_only) {
    c.skipped =
        "REGIME_READ_ONLY is set: the evaluation changes the limit. To evaluate, unset it "
        "and run: " +
        c.command;
  } else if (site.physical && !r.actuate) {
    c.skipped = needs_actuate_message("the evaluation", "", "evaluate", c.command);
  }
  if (!c.skipped.empty()) {
    c.reason = "thermal-bound: the gated controller would engage";
    return;
  }
  ControlRequest cr;
  cr.device = r.device;
  cr.workload = r.workload;
  cr.seconds = seconds;
  cr.evaluate = true;
  cr.actuate = r.actuate;
  cr.db = r.settings.db;
  c.run = run_control(cr);
  c.engaged = c.run->engaged;
  c.reason = c.run->reason;
}

}  // namespace regime::session
