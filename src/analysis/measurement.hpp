#pragma once
// Plain results of the pure analysis (measure() and classify() in this folder).
// Units are in the names. Intervals are [lo, hi] of a bootstrap confidence interval.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace regime {

enum class EnergySource { Counter, InstantPower, AveragedPower, None };
// "counter", "instant-power", ...: as the JSON writes it.
std::string energy_source_name(EnergySource s);

using Interval = std::pair<double, double>;

struct Measurement {
  double window_start_s = 0;  // the steady-state window analysed (warm-up dropped)
  double window_end_s = 0;
  int steps = 0;  // complete steps inside the window (0 with --no-steps)
  // Per step; with no steps these are per second of the window (time_per_step_s = 1).
  double time_per_step_s = 0;  // median
  Interval time_per_step_ci_s{0, 0};
  double energy_per_step_J = 0;
  Interval energy_per_step_ci_J{0, 0};
  EnergySource energy_source = EnergySource::None;
  double avg_power_W = 0;
  double p95_power_W = 0;
  std::optional<double> mean_temp_C, max_temp_C;
  std::optional<double> mean_sm_MHz, p05_sm_MHz, max_sm_MHz_seen;
  std::optional<double> mean_util_pct;
  std::optional<double> mean_limit_W;
  // Fraction of the window each clocks-event reason bit was active (key: bit value).
  std::map<uint64_t, double> reason_fraction;
  bool reasons_known = false;  // the samples carried reason masks (all zero leaves the map empty)

  // Extensions of the docs/contracts.md contract (compatible: new fields only).
  bool per_second = false;        // no steps: the per-step figures are per second of the window
  double energy_J = 0;            // energy of the whole window
  double warmup_dropped_s = 0;    // time cut before the window as warm-up
  std::string steady_state_rule;  // how the window was chosen, in words
  std::string energy_detail;      // which readings gave the energy, in words
  int gpu = 0;                    // device index measured
  int samples = 0;                // samples overlapping the window
  std::optional<double> step_gap_fraction;  // share of the window between steps (steps only)
  // Mean power over consecutive short windows (window_power_s) of the finest instantaneous power,
  // sorted ascending: what a power limiter averaging over such a window sees. Whether and how
  // often a lower cap would bind is read from it (analysis/binding.hpp).
  std::vector<double> window_power_W;
  double window_power_s = 0;
  std::string window_power_source;
};

enum class Regime { CapBound, ThermalBound, Headroom, Underutilized, Idle };
std::string to_string(Regime r);

// One kind of phase of a run that changes what it does (analysis/phases.hpp): its spans measured
// as one window and classified as a run is.
struct PhaseReport {
  Regime regime = Regime::Idle;
  double confidence = 0;
  std::string advice;
  nlohmann::json evidence;
  Measurement measurement;        // its spans together: window_s is their summed length
  double time_fraction = 0;       // of the phased window
  double energy_fraction = 0;     // of the energy of all phases
  std::vector<Interval> spans_s;  // [start, end] of each span, time-ordered
};

struct RegimeReport {
  Regime regime = Regime::Idle;
  double confidence = 0;  // 0..1
  std::string advice;
  nlohmann::json evidence;  // the numbers that decided, by name, with units in the keys
  Measurement measurement;
  // Empty for a steady run. Two or more for a run of phases, most energy first: then the regime,
  // confidence and evidence are the first phase's and the advice is written for the mix.
  std::vector<PhaseReport> phases;
  std::optional<double> phase_cycle_s;  // the period of a repeating cycle of phases
  int phase_cycles = 0;                 // how often the cycle began in the window
  std::string phase_rule;               // how the phases were found, in words
};

}  // namespace regime
