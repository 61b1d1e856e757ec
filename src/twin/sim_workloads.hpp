#pragma once
// The built-in simulated training workloads (sim:NAME). A profile says what one step asks of any
// GPU; workload_on() turns it into times and activity on one GPU model.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "twin/model.hpp"
#include "twin/spec.hpp"

namespace regime::twin {

struct SimWorkloadProfile {
  std::string name;
  std::string description;
  double tflop_per_step = 0;   // clock-bound work, in dense tensor-throughput equivalents
  double gbyte_per_step = 0;   // memory-bound traffic (time = bytes / bandwidth)
  double host_s_per_step = 0;  // host / input time while the GPU waits
  double activity = 1;         // switching activity of a fully occupied SM, relative to the spec's
  double mem_util = 0.5;       // DRAM bandwidth use while busy
  double parallel_sms = 1e9;   // SMs its kernels keep busy: small models under-fill big GPUs
  // The batch size and precision the profile's figures are for (nullopt: no batch, as gemm).
  std::optional<int> batch;
  std::string precision;
};

// Error NotFound listing the names (the phased ones too).
SimWorkloadProfile sim_workload_profile(const std::string& name);
// The steady workloads only: every figure computed over them (calibrations, fits, steady states)
// stays what it was when a phased workload is added.
std::vector<std::string> sim_workload_names();

// A workload that changes what it asks of the GPU over time (sim:phased): its phases run one after
// another for their durations and the cycle repeats until the run ends. Each phase is a steady
// profile; the steps of one phase run with that phase's times and activity.
struct SimPhase {
  SimWorkloadProfile profile;
  double duration_s = 0;
  // > 0 in every phase: each phase is this many steps of work (duration_s is then what they take
  // at the default limit), so a cap that slows a phase lengthens it, as a served request's prefill
  // and decode each have their work to do.
  int64_t steps = 0;
};
struct PhasedWorkloadProfile {
  std::string name;
  std::string description;
  std::vector<SimPhase> phases;
};
// nullopt for a name that is not a phased workload.
std::optional<PhasedWorkloadProfile> phased_workload_profile(const std::string& name);
std::vector<std::string> phased_workload_names();

// Per-step parameters on a GPU: a profile that fills only part of the SMs runs at that share of
// the peak rate and with lower chip activity.
WorkloadParams workload_on(const SimWorkloadProfile& profile, const GpuSpec& gpu);

// "SW power cap", "SW thermal + HW thermal", "-" for none.
std::string describe_reasons(uint64_t reasons);

}  // namespace regime::twin
