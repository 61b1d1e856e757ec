#pragma once
// classify(): a Measurement and the GPU's facts in, the regime out (docs/contracts.md, "Regimes"),
// with a confidence, the numbers that decided (units in the keys) and the advice. Every threshold
// below is explained in docs/analysis.md "Regime rules".
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "analysis/measurement.hpp"
#include "common/gpu_info.hpp"
#include "trace/trace.hpp"

namespace regime {

// Rules are tried in this order: idle, thermal-bound, cap-bound, underutilized, headroom. Falling
// clocks are put down to the reasons the counters saw: with reason counters in the window, heat is
// blamed only when the thermal reasons were active at least as long as the power cap (a hot card
// held by its cap is cap-bound); the temperature-only rule serves traces without reason counters.
inline constexpr double kIdleUtilPct = 5;               // below: no work (without steps)
inline constexpr double kIdleReasonFraction = 0.5;      // idle bit most of the time (no util)
inline constexpr double kThermalReasonFraction = 0.10;  // thermal bits at least 10% of the time
inline constexpr double kThermalMargin_C = 5;           // "near" the slowdown temperature
inline constexpr double kFallingClockRatio = 0.90;      // p05 SM clock under 90% of max
inline constexpr double kCapReasonFraction = 0.5;       // SW power cap most of the time
inline constexpr double kCapPowerRatio = 0.95;          // mean power within 5% of the limit
inline constexpr double kClocksAtMaxRatio = 0.97;       // mean SM clock within 3% of max
inline constexpr double kUnderutilizedPct = 50;         // kernels running under half the time
inline constexpr double kHeadroomPowerRatio = 0.85;     // at or under: full headroom confidence
// A limiting reason active this share of the window is named in the evidence, and one that falls
// short of its own rule by less than that rule's band makes the verdict borderline.
inline constexpr double kMaterialReasonShare = 0.05;
inline constexpr double kBorderlineCapShare = 0.10;  // cap share within 10 points of 50%
inline constexpr double kBorderlineUtilPct = 10;     // utilization within 10 points of 50%
inline constexpr int kShortRunSteps = 20;            // fewer steps: confidence x0.8
// Below these no regime is named at all: power is updated every 100 ms (H200), so half a second
// holds 5 readings, and a median step time wants 5 steps.
inline constexpr double kMinWindow_s = 0.5;
inline constexpr int kMinSteps = 5;
inline constexpr double kShortRun_s = 5;  // shorter window: confidence x0.8

// Facts a user can supply when the trace lacks them (a recorded trace has no GpuInfo).
struct GpuSpecOverrides {
  std::optional<double> enforced_limit_W;
  std::optional<double> max_sm_MHz;
  std::optional<double> slowdown_temp_C;
};

// What a trace says about its GPU: the enforced limit (last limit_W), the highest SM and memory
// clocks seen anywhere in the trace. Limits other than the enforced one, temperature thresholds,
// name and UUID are unknown (zero / empty / nullopt). device = "trace".
GpuInfo infer_gpu_info(const Trace& trace, std::optional<int> gpu = std::nullopt);
GpuInfo apply_overrides(GpuInfo info, const GpuSpecOverrides& overrides);

// The thresholds a calibration varies (docs/analysis.md, "Choosing the thresholds").
struct ClassifyThresholds {
  double cap_reason_fraction = kCapReasonFraction;
  double thermal_reason_fraction = kThermalReasonFraction;
  double material_reason_share = kMaterialReasonShare;
};

RegimeReport classify(const Measurement& m, const GpuInfo& gpu);
RegimeReport classify(const Measurement& m, const GpuInfo& gpu, const ClassifyThresholds& t);
RegimeReport classify(const Measurement& m, const GpuInfo& gpu, const GpuSpecOverrides& overrides);

// Why a measurement is too short to name a regime (its window under kMinWindow_s, or fewer than
// kMinSteps steps); empty when it is long enough.
std::string too_short_to_classify(const Measurement& m);

// A measurement's regime, or, when it is too short to name one, why (and no report).
struct RegimeOrWhy {
  std::optional<RegimeReport> report;  // classify(m, gpu) when m is long enough
  std::string too_short;               // too_short_to_classify(m) otherwise
};
RegimeOrWhy classify_if_long_enough(const Measurement& m, const GpuInfo& gpu);

// {"regime","confidence","advice","evidence":{...},"measurement":{...}} (docs/contracts.md).
nlohmann::json to_json(const RegimeReport& r);

// A readable multi-line summary for the terminal (classify, probe).
std::string format_report(const RegimeReport& r);

}  // namespace regime
