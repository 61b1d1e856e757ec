#pragma once
// A simulated corpus of power-cap sweep tables for the decision benchmark (docs/sweep.md,
// "Decision benchmark"), built to differ from the two real tables in the repository where real
// tables differ from each other: low mean draw with peaky power (caps above the mean draw still
// bind), 9 to 15 caps, 0.5 to 4% noise, few rows that repeat the default, thermal cliffs (a card
// that throttles on heat runs faster under a lower cap), voltage-floor knees (energy falls, then
// rises sharply) and different default/minimum ratios.
//
// A parametric model, not the twin: each workload alternates a compute phase and a memory phase;
// a limiter holds each phase's power under the cap by lowering its clock; power is static plus
// activity x f x V(f)^2 with a voltage floor; a card whose mean draw passes its thermal limit runs
// at a throttled clock; rows carry log-normal noise on time and power.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/sweep_table.hpp"

namespace regime::plan {

struct SimGpuModel {
  std::string name;             // the table's gpu column
  double default_W = 300;       // the highest cap
  double min_W = 100;           // the lowest cap
  int caps = 11;                // evenly spaced from min_W to default_W
  double noise_rel = 0.01;      // sd of the log noise of time and of power per row
  double static_W = 60;         // power at zero activity
  double voltage_floor = 0.65;  // V(f) = max(floor, f / f_max), relative to f_max
  double min_clock = 0.3;       // lowest clock the limiter reaches, relative to f_max
  // A card whose mean draw at a cap exceeds thermal_W (0: never) runs at thermal_clock x f_max.
  double thermal_W = 0;
  double thermal_clock = 0.75;
};

// One simulated GPU's table as measured (with noise) and the truth behind it (the same rows
// without noise): a decision is made on the first and judged on the second.
struct SimTable {
  SweepTable measured;
  SweepTable truth;
};

// The GPUs of the corpus (four models) and their tables; the same seed gives the same tables,
// byte for byte.
std::vector<SimGpuModel> sim_corpus_gpus();
std::vector<SimTable> sim_corpus(uint64_t seed = 1, int workloads_per_gpu = 24);
// The same GPUs with workloads whose peaks stay under the lowest cap (35-90% of it): no cap
// binds, every row repeats the default, and the right decision is the default everywhere. The
// tables are named <GPU>Flat.
std::vector<SimTable> sim_flat_corpus(uint64_t seed = 2, int workloads_per_gpu = 24);
// The same GPUs swept on a grid kDenseGridFactor times as fine (25 to 43 caps, as consumer cards
// swept in 10 W steps are), with workloads drawn as sim_corpus's: a search whose probes grow with
// the grid shows here. The tables are named <GPU>Dense.
inline constexpr int kDenseGridFactor = 3;
std::vector<SimTable> sim_dense_corpus(uint64_t seed = 3, int workloads_per_gpu = 24);

}  // namespace regime::plan
