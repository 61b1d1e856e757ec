#pragma once
// `regime recommend`: the decision for every workload of a sweep table.
#include <string>
#include <vector>

#include "plan/decision.hpp"
#include "trace/sweep_table.hpp"

namespace regime::plan {

struct Recommendation {
  std::string workload;
  std::string gpu;
  Decision decision;
};

// The probes of one workload's rows (highest cap first).
std::vector<ProbeResult> probes_from_rows(const std::vector<SweepRow>& rows);

// The table's noise for one GPU, pooled over its workloads (evidence.hpp, table_noise_priors).
NoisePriors table_priors(const SweepTable& table, const std::string& gpu);

// One decision per (workload, gpu) in table order; the default limit of each is its highest cap,
// which is also P_max for zeus. Single measurements are judged with the noise of the GPU's whole
// table (table_priors).
std::vector<Recommendation> recommend(const SweepTable& table, const Objective& objective);

// A kept live sweep decided again: one workload's rows, with the default measured again at its
// end (plan/decision.hpp) when the sweep had it.
Recommendation recommend_kept(const SweepTable& table, const Objective& objective,
                              const std::optional<Measurement>& default_again);

}  // namespace regime::plan
