#pragma once
// Phases of a run (docs/analysis.md, "Phases"): a job that alternates, say, large matrix products
// with host-bound small steps is several steady runs interleaved, and one regime over its mean
// names neither. Pure functions over a Trace.
//
// The window is cut into blocks of kPhaseBlock_s; each block's mean power (the finest power the
// trace has) is its level. The blocks' levels are split into at most kMaxPhaseKinds kinds, a split
// kept only when its two levels lie far apart against the spread inside each (kPhaseSeparation)
// and by a real share of power (kPhaseMinGapRel). Consecutive blocks of one kind make a span; a
// span shorter than kMinPhase_s joins its neighbour, and a kind left with under kMinPhaseShare of
// the time joins the nearest level. Each kind's spans are measured together (measure_window per
// span, the figures summed or time-weighted) and classified as a run is; the job is named by the
// kind holding most of its energy. A run is named by its phases only when they recur (a kind
// with two or more spans); levels that change once are a trend, named as one window.
#include <optional>
#include <string>
#include <vector>

#include "analysis/measure.hpp"
#include "analysis/steady_state.hpp"
#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime {

// A power limiter and NVML's power both act over about half a second; the steady-state blocks
// are the same length.
inline constexpr double kPhaseBlock_s = 0.5;
// Shorter than this is a blip (a checkpoint write, one slow batch), not a phase: four blocks, and
// long enough for the firmware governor (about 1 s to settle) and a controller acting at 1 Hz to
// see it.
inline constexpr double kMinPhase_s = 2.0;
// A split of the levels is kept when the gap between their means is this many pooled standard
// deviations of the blocks inside them. One level split in two gives 2.7 (normal noise) to 3.5
// (a steady drift); chosen on the simulated runs, checked on the H200 traces (docs/analysis.md).
inline constexpr double kPhaseSeparation = 5.0;
// ... and at least this share of the higher level: a few per cent of power is the same work.
inline constexpr double kPhaseMinGapRel = 0.15;
// A kind with less of the window's time is folded into the nearest level: too little to change
// what a cap does for the job.
inline constexpr double kMinPhaseShare = 0.10;
inline constexpr int kMaxPhaseKinds = 3;
// Phases that have recurred this many times are a cycle to follow: a settling test or a heating
// watch then compares whole cycles (cycle_drift), since any other window cuts their own rises
// and falls at random.
inline constexpr int kPhaseCyclesToFollow = 3;

struct PhaseOptions {
  double block_s = kPhaseBlock_s;
  double min_phase_s = kMinPhase_s;
  double separation = kPhaseSeparation;
  double min_gap_rel = kPhaseMinGapRel;
  double min_share = kMinPhaseShare;
  int max_kinds = kMaxPhaseKinds;
};

struct PhaseSpan {
  double t0_s = 0;
  double t1_s = 0;
  int kind = 0;  // index into PhaseSegmentation::level_W
};

struct PhaseSegmentation {
  std::vector<PhaseSpan> spans;  // time-ordered, end to end over the window
  std::vector<double> level_W;   // mean power of each kind, highest first
  // The separation (gap / pooled SD) of the last split tried: the smallest kept one, or, for one
  // kind, the best one refused. 0 when no split could be tried.
  double separation = 0;
  std::optional<double> cycle_s;  // the period, when the spans of each kind repeat regularly
  int cycles = 0;                 // spans of the most repeated kind
  std::string rule;               // what was found, in words
  int kinds() const { return static_cast<int>(level_W.size()); }
};

// The phases of [t0_s, t1_s] of one GPU (default: the first sample's). One kind, one span, when
// the window is steady, too short for two phases, or has no power readings.
PhaseSegmentation find_phases(const Trace& trace, double t0_s, double t1_s,
                              std::optional<int> gpu = std::nullopt, const PhaseOptions& opts = {});

// The phases of a measured run: of its steady window; when that is phased and the warm-up rule
// dropped time before it, of the span from its first step, whose first phase the rule took for a
// warm-up. A steady window stays as measure() chose it.
PhaseSegmentation find_run_phases(const Trace& trace, const Measurement& whole,
                                  const PhaseOptions& opts = {});

// The spans' figures as one measurement: each span measured by measure_window (no warm-up
// dropped: a span starts where the level changed), energies, steps and times summed, the rest
// time-weighted. window_start_s is the first span's start, window_end_s that plus the summed
// length. A span with nothing to measure is left out; Error InvalidArgument when none is left.
Measurement measure_spans(const Trace& trace, const std::vector<Interval>& spans_s,
                          const MeasureOptions& opts = {});

// A steady run's report unchanged; for a run of two or more phase kinds inside the report's
// window, each kind measured and classified, and the job named by the one holding most of the
// energy, with advice for the mix.
RegimeReport with_phases(const Trace& trace, RegimeReport whole, const GpuInfo& gpu,
                         const MeasureOptions& opts = {}, const PhaseOptions& phase_opts = {});

nlohmann::json to_json(const PhaseReport& p);
// The JSON of a report's phases ({"phases": [...], "phase_cycle_s", "phase_rule"}), added to
// to_json(RegimeReport) for a run of phases; nothing for a steady run.
void add_phases_json(const RegimeReport& r, nlohmann::json& out);
// The report's phase lines for the terminal; "" for a steady run.
std::string format_phases(const RegimeReport& r);

// Whole cycles of a job of phases (docs/sweep.md, "A job of phases"): a window that ends
// mid-cycle holds another mix of the phases than the next one, so windows compared across caps
// cover whole cycles, and a card is settled when one cycle's means match the one before.

// The last cycle [t_end_s - cycle_s, t_end_s] of one GPU against the one before, per minute:
// mean power's relative change and mean temperature's change. nullopt when either cycle has no
// power reading.
struct CycleDrift {
  double power_rel_per_min = 0;
  std::optional<double> temp_C_per_min;
};
std::optional<CycleDrift> cycle_drift(const Trace& trace, double t_end_s, double cycle_s, int gpu);

// How fast one GPU heats at t_end_s, in C per minute, with a standard error: for a run whose
// phases have recurred kPhaseCyclesToFollow times in [t0_s, t_end_s] (two whole cycles at least),
// the last cycle's mean temperature against the one before's (its temperature rises in each busy
// phase and falls in each stall, so a trailing window reads their swing, not the card's trend);
// otherwise the least-squares slope over the trailing window_s. nullopt without temperatures.
struct HeatingRate {
  Slope temp_C;                   // per minute, with its standard error (0 cycle against cycle)
  std::optional<double> cycle_s;  // judged cycle against cycle
};
std::optional<HeatingRate> heating_rate(const Trace& trace, double t0_s, double t_end_s,
                                        double window_s, int gpu);
// The segmentation's cycle when it is one to follow: two kinds or more whose spans have recurred
// kPhaseCyclesToFollow times; nullopt otherwise.
std::optional<double> cycle_to_follow(const PhaseSegmentation& seg);
// Where a cycle begins (the start of the highest-power kind) at or after `after_s`, carried along
// the cycle from the last such start the segmentation holds; nullopt without a cycle.
std::optional<double> next_cycle_start(const PhaseSegmentation& seg, double after_s);

// `cycles` whole cycles from start_s measured as one window (measure_window, no warm-up dropped):
// energy and steps of the window, energy per step their ratio, time per step the window's length
// over its steps (the job's rate over the mix; a median would be the commoner phase's step), and
// each interval Student-t over the cycles' own figures (two cycles at least; one gives the
// window's own intervals).
Measurement measure_cycles(const Trace& trace, double start_s, double cycle_s, int cycles,
                           const MeasureOptions& opts = {});

}  // namespace regime
