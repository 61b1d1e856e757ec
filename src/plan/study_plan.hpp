#pragma once
// `regime study`, the main job (docs/architecture.md and docs/contracts.md): probe, classify, sweep
// if warranted, decide, report. This file holds the pure parts: which caps the regime warrants
// sweeping, the command a user runs to sweep a real GPU, the interval of the decision's energy
// change, and the study's JSON and text. The edges (running work, setting limits) are in
// src/session/study/study.cpp.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/measurement.hpp"
#include "common/gpu_info.hpp"
#include "plan/decision.hpp"
#include "plan/probe.hpp"

namespace regime::plan {

// What the regime warrants (regime-first: the regime decides whether and where to sweep).
struct SweepPlan {
  bool sweep = false;
  std::vector<double> caps;          // highest first, default limit included; empty when no sweep
  std::string why;                   // why this sweep, or why none
  bool controller_may_help = false;  // thermal-bound: a thermal controller may stop throttling
};

// cap-bound: from the enforced limit down to the minimum; headroom: from the highest cap that the
// probe's power windows say would bind at least kMinBindShare of the time (analysis/binding.hpp;
// none: no sweep), or without windows from the mean draw x (1 + plan::kNoBindMargin) down;
// thermal-bound: from the enforced limit down, and a controller may help; underutilized, idle: no
// sweep. The default limit is always in the grid (every decision compares against it).
SweepPlan plan_sweep(const RegimeReport& report, const GpuInfo& info);

// The exact `regime sweep` command that measures `plan`'s caps on a real GPU. `workload` is a
// built-in (sim:NAME) or empty when `command` (the argv after --) is given.
struct SweepCommandInputs {
  std::string device;
  std::string workload;
  std::vector<std::string> command;
  std::string step_regex;
  std::string strategy;
  std::string objective;
};
std::string sweep_command(const SweepCommandInputs& in, const std::vector<double>& caps);

// Energy-per-step change of `chosen` against `at_default`, percent, with a conservative 95%
// interval from the corners of both intervals; nullopt interval when either has none.
struct Change {
  double pct = 0;
  std::optional<Interval> ci_pct;
};
Change energy_change(const plan::ProbeResult& chosen, const plan::ProbeResult& at_default);
Change time_change(const plan::ProbeResult& chosen, const plan::ProbeResult& at_default);

}  // namespace regime::plan
