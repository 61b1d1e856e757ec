#pragma once
// Per-GPU-model facts (data/gpus/<model>.json): public limits, clocks, SM count, bandwidth and
// thermal thresholds, plus the physics constants of the twin (DVFS curve with its voltage floor,
// power components, thermal RC). Shared by the twin, the predictors and reports.
#include <string>
#include <vector>

namespace regime::twin {

struct GpuSpec {
  std::string model;                 // file stem, lower case: "t4", "h200" ...
  std::string name;                  // as NVML names it: "Tesla T4", "NVIDIA H200"
  std::vector<std::string> aliases;  // other names accepted by load_gpu_spec

  // Public limits and clocks.
  double min_limit_W = 0, max_limit_W = 0, default_limit_W = 0;
  double max_sm_MHz = 0;   // highest boost clock the governor uses
  double min_sm_MHz = 0;   // lowest clock the power governor drops to under load
  double idle_sm_MHz = 0;  // clock with no work (P8-like state)
  double max_mem_MHz = 0;
  int sm_count = 0;
  double mem_bandwidth_GBps = 0;
  double peak_tflops = 0;  // dense fp16/bf16 tensor throughput at max_sm_MHz

  // DVFS: voltage is flat at the floor below voltage_floor_MHz and rises linearly to 1 (relative to
  // the voltage at max_sm_MHz) above it. Below the floor power falls only linearly with the clock.
  double voltage_floor_MHz = 0;
  double voltage_floor_ratio = 0;  // V(floor) / V(max), 0 < r <= 1

  // Power components (W). busy = base + leakage(V, T) + activity * dynamic(f, V) + mem_util *
  // memory.
  double idle_power_W = 0;     // no work at idle clocks, ambient temperature
  double base_power_W = 0;     // clocks up, nothing computing (board, fans, memory refresh)
  double leakage_power_W = 0;  // static power at V(max) and 25 C
  double leakage_per_C = 0;    // relative rise of static power per degree C above 25 C
  double dynamic_power_W = 0;  // switching power at max_sm_MHz, V(max), activity 1
  double memory_power_W = 0;   // DRAM/HBM power at full bandwidth use

  // Thermal: first-order RC, T_ss = ambient + R * cooling * P.
  double ambient_C = 25;
  double thermal_resistance_C_per_W = 0;
  double thermal_time_constant_s = 0;
  double slowdown_temp_C = 0;  // software thermal slowdown starts here
  double shutdown_temp_C = 0;
  double gpu_max_temp_C = 0;

  // Firmware power governor: integral gain (fraction of max clock per second per relative watt of
  // error) and the time constant of its power filter.
  double governor_gain_per_s = 4.0;
  double governor_filter_s = 0.03;
};

// Loads data/gpus/<model>.json from regime::data_dir(). Accepts the file stem in any case
// ("h200", "H200") and the names and aliases in the files ("NVIDIA H200", "RTX6000", "Quadro RTX
// 6000"). Error NotFound listing the known models; Error Parse naming the file and the field.
GpuSpec load_gpu_spec(const std::string& model);

// The model stems found in data/gpus, sorted.
std::vector<std::string> gpu_models();

// Parses one spec file's text (used by load_gpu_spec and tests); `origin` names it in errors.
GpuSpec parse_gpu_spec(const std::string& json_text, const std::string& origin);

}  // namespace regime::twin
