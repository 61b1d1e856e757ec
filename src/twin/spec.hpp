#pragma once
// Per-GPU-model facts (data/gpus/<model>.json): public limits, clocks, SM count, bandwidth and
// thermal thresholds, plus the physics constants of the twin (DVFS curve with its voltage floor,
// power components, thermal RC). Shared by the twin, the predictors and reports.
#include <map>
#include <optional>
#include <string>
#include <utility>
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
  // Dense fp32 (CUDA cores) and TF32 (tensor) throughput from the data sheet: what another
  // precision than the profiles' 16-bit runs at. 0: not in the file; nullopt: no TF32 on the card.
  double fp32_tflops = 0;
  std::optional<double> tf32_tflops;

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
  double slowdown_temp_C = 0;  // hardware slowdown (HW thermal, 0x40) starts here
  // gpu_max_temp_C (below): software thermal slowdown (0x20) starts here
  double shutdown_temp_C = 0;
  double gpu_max_temp_C = 0;

  // Firmware power governor: integral gain (fraction of max clock per second per relative watt of
  // error) and the time constant of its power filter.
  double governor_gain_per_s = 4.0;
  double governor_filter_s = 0.03;

  // Where each number comes from (field name -> source text): every numeric field has one.
  std::map<std::string, std::string> sources;
  // Physically plausible range [lo, hi] of each twin constant, and of two derived quantities:
  // "static_power_W" (base + leakage at V(max), 25 C: what a busy-but-waiting card draws) and
  // "loaded_sm_MHz" (the twin's steady clock for vgg16 at the default limit). The fit keeps the
  // static power inside its range.
  std::map<std::string, std::pair<double, double>> bounds;
  // Caps at which the twin's figures were compared with measurements, and the worst relative
  // error seen there: predictions far from these caps carry a wider interval (uncertainty.hpp).
  std::vector<double> calibrated_caps_W;
  double calibration_error_pct = 0;
  std::string calibration;  // what the constants were chosen to reproduce (empty: nothing)

  // Static power at V(max) and 25 C.
  double static_power_W() const { return base_power_W + leakage_power_W; }
};

// The numeric fields of a spec file by name, as read (used by the bounds and sources checks).
std::vector<std::pair<std::string, double>> numeric_fields(const GpuSpec& spec);

// Names of the twin's physical constants: each needs bounds in its spec file.
const std::vector<std::string>& twin_constant_names();

// The physical envelope every spec's bounds must lie in, scaled by the card's own public figures
// (limits, clocks): e.g. dynamic power 0.4-2.5 x the maximum limit. Key as in GpuSpec::bounds.
std::map<std::string, std::pair<double, double>> physical_envelope(const GpuSpec& spec);

// "field: value outside [lo, hi]" for each constant outside its spec bounds; empty when all hold.
std::vector<std::string> bound_violations(const GpuSpec& spec);

// Loads data/gpus/<model>.json from regime::data_dir(). Accepts the file stem in any case
// ("h200", "H200") and the names and aliases in the files ("NVIDIA H200", "RTX6000", "Quadro RTX
// 6000"). Error NotFound listing the known models; Error Parse naming the file and the field.
GpuSpec load_gpu_spec(const std::string& model);
// The same, nullopt for a model Regime does not know (a Parse error still throws).
std::optional<GpuSpec> find_gpu_spec(const std::string& model);

// The model stems found in data/gpus, sorted.
std::vector<std::string> gpu_models();

// Parses one spec file's text (used by load_gpu_spec and tests); `origin` names it in errors.
GpuSpec parse_gpu_spec(const std::string& json_text, const std::string& origin);

}  // namespace regime::twin
