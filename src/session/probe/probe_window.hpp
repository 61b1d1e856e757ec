#pragma once
// Which part of a trace the one probe at the current limit (analysis/probe_regime.hpp's
// name_probe_regime) names a regime from. The rules of warm-up and classification are the
// probe's own; its callers differ only in what their trace holds, and each such reason is one
// function here.
#include "analysis/probe_regime.hpp"
#include "trace/trace.hpp"

namespace regime::session {

// The trace holds the probe alone (`regime probe`, the scheduler job's study): all of it.
inline ProbeWindow whole_probe() { return {}; }

// The probe is the start of a run that goes on (control's gate): from where it began to now.
inline ProbeWindow probe_within_run(double from_s, double to_s) { return {from_s, to_s}; }

// The probe ran on past probe_seconds because the card was still heating (a study watches it
// until its temperature is flat); the second of slack is the watch's last tick.
inline bool ran_on(double ran_s, double probe_seconds) { return ran_s > probe_seconds + 1; }

// A study's probe: its last probe_seconds when it ran on while the card heated, so that a hot
// card is named as it runs once warm and from as long a window as a probe that did not; else
// all of it.
inline ProbeWindow heated_probe_span(const Trace& t, double ran_s, double probe_seconds) {
  if (!ran_on(ran_s, probe_seconds)) return whole_probe();
  const double end_s = t.samples.empty() ? 0 : t.samples.back().t_s;
  return {end_s - probe_seconds, end_s};
}

// A job of phases (the default limit's measurement): the window of whole cycles that the
// measurement chose, so that each phase counts in proportion.
inline ProbeWindow whole_cycles(double start_s, double end_s) { return {start_s, end_s}; }

}  // namespace regime::session
