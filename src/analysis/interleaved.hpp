#pragma once
// The comparison of an interleaved A/B run: one workload on one device, windows alternating
// between a baseline arm (A) and a treated arm (B), A B A B ... A. Each window gives one figure
// (e.g. energy per step over its settled part). A drift over the run (the room warming, a
// workload that slows) is removed by fitting
//     y_w = b0 + b1 * treated_w + b2 * (t_w - mean t) + e_w
// by least squares over the windows; with A first and last, both arms have the same mean time, so
// b1 is the difference of the arm means and a linear drift cancels exactly. Intervals are
// Student-t with windows - 3 degrees of freedom from the residuals, which carry the
// window-to-window noise. Changes are fitted on log y (a ratio), levels on y itself.
#include <span>
#include <string>

#include "analysis/measurement.hpp"

namespace regime {

struct ArmWindow {
  bool treated = false;
  double t_mid_s = 0;  // the middle of the window's measured part, on the run clock
  double value = 0;    // > 0 (a per-step figure)
};

struct ArmLevel {
  double value = 0;  // fitted at the run's mean time
  Interval ci{0, 0};
  int windows = 0;
};

struct InterleavedComparison {
  ArmLevel baseline, treated;
  double change_pct = 0;  // treated against baseline: 100 * (exp(b1 on log y) - 1)
  Interval change_ci_pct{0, 0};
  int dof = 0;
};

// Error InvalidArgument for fewer than 4 windows, an arm without windows, a value that is not
// finite and positive, or a confidence outside (0, 1).
InterleavedComparison compare_interleaved(std::span<const ArmWindow> windows,
                                          double confidence = 0.95);

enum class Verdict { Helps, NoSignificantEffect, Hurts };
std::string to_string(Verdict v);  // "helps", "no significant effect", "hurts"

// The margins a change must clear, beyond its interval, to count (docs/control.md says how they
// were chosen on some simulated pairs and checked on others).
struct VerdictRule {
  double energy_margin_pct = 0;
  double time_margin_pct = 0;
};

// helps: the energy-per-step change interval lies wholly below -energy_margin_pct.
// hurts: it lies wholly above +energy_margin_pct, or energy is not helped and the time-per-step
// change interval lies wholly above +time_margin_pct (slower for nothing).
// Otherwise: no significant effect.
Verdict judge(const Interval& energy_change_ci_pct, const Interval& time_change_ci_pct,
              const VerdictRule& rule);

}  // namespace regime
