#include "analysis/classify.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "analysis/measure.hpp"
#include "analysis/phases.hpp"
#include "analysis/reasons.hpp"
#include "analysis/statistics.hpp"
#include "common/name_table.hpp"

namespace regime {

std::string to_string(Regime r) {
  constexpr std::string_view kNames[] = {"cap-bound", "thermal-bound", "headroom", "underutilized",
                                         "idle"};
  return std::string(name_of(r, kNames, "idle"));
}

GpuInfo infer_gpu_info(const Trace& trace, std::optional<int> gpu) {
  GpuInfo info;
  info.device = "trace";
  const int index = gpu ? *gpu : (trace.samples.empty() ? 0 : trace.samples.front().gpu);
  info.index = index;
  for (const Sample& s : trace.samples) {
    if (s.gpu != index) continue;
    if (s.limit_W) info.enforced_limit_W = *s.limit_W;  // the last one wins
    if (s.sm_MHz) info.max_sm_MHz = std::max(info.max_sm_MHz.value_or(0), *s.sm_MHz);
    if (s.mem_MHz) info.max_mem_MHz = std::max(info.max_mem_MHz.value_or(0), *s.mem_MHz);
  }
  info.current_limit_W = info.enforced_limit_W;
  return info;
}

GpuInfo apply_overrides(GpuInfo info, const GpuSpecOverrides& o) {
  if (o.enforced_limit_W) {
    info.enforced_limit_W = *o.enforced_limit_W;
    info.current_limit_W = *o.enforced_limit_W;
  }
  if (o.max_sm_MHz) info.max_sm_MHz = *o.max_sm_MHz;
  if (o.slowdown_temp_C) info.slowdown_temp_C = *o.slowdown_temp_C;
  return info;
}

namespace {

double fraction(const Measurement& m, uint64_t mask) {
  // Bits are independent: the time any of them is active is at least the largest single one.
  double f = 0;
  for (const auto& [bit, share] : m.reason_fraction)
    if (bit & mask) f = std::max(f, share);
  return f;
}

double confidence_from(double margin) { return std::clamp(0.5 + 0.5 * margin, 0.2, 1.0); }

double round2(double v) { return std::round(v * 100) / 100; }
double round1(double v) { return std::round(v * 10) / 10; }

nlohmann::json opt1(const std::optional<double>& v) {
  return v ? nlohmann::json(round1(*v)) : nlohmann::json(nullptr);
}

struct Facts {
  std::optional<double> limit_W, max_sm_MHz, slowdown_C;
  std::optional<double> power_ratio, sm_ratio;
  double cap_frac = 0, thermal_frac = 0, idle_frac = 0, hw_slowdown_frac = 0;
  bool reasons_known = false;
};

// The reasons that limit clocks (idle, application clocks and the like do not).
constexpr uint64_t kLimitingReasons = reason::kSwPowerCap | reason::kHwSlowdown |
                                      reason::kSwThermal | reason::kHwThermal |
                                      reason::kHwPowerBrake;

// "sw_power_cap 41%, sw_thermal 12%": every limiting reason active for a material share.
std::string material_reasons(const Measurement& m, double material_share) {
  std::string out;
  for (const auto& [bit, share] : m.reason_fraction)
    if ((bit & kLimitingReasons) && share >= material_share)
      out += fmt::format("{}{} {:.0f}%", out.empty() ? "" : ", ", reason_name(bit), 100 * share);
  return out;
}

Facts facts_of(const Measurement& m, const GpuInfo& gpu) {
  Facts f;
  if (gpu.enforced_limit_W > 0)
    f.limit_W = gpu.enforced_limit_W;
  else if (m.mean_limit_W)
    f.limit_W = m.mean_limit_W;
  f.max_sm_MHz = gpu.max_sm_MHz ? gpu.max_sm_MHz : m.max_sm_MHz_seen;
  f.slowdown_C = gpu.slowdown_temp_C;
  if (f.limit_W && *f.limit_W > 0 && m.energy_source != EnergySource::None)
    f.power_ratio = m.avg_power_W / *f.limit_W;
  if (f.max_sm_MHz && *f.max_sm_MHz > 0 && m.mean_sm_MHz)
    f.sm_ratio = *m.mean_sm_MHz / *f.max_sm_MHz;
  f.cap_frac = fraction(m, reason::kSwPowerCap);
  f.thermal_frac = fraction(m, kThermalReasons);
  f.idle_frac = fraction(m, reason::kIdle);
  f.hw_slowdown_frac = fraction(m, reason::kHwSlowdown);
  f.reasons_known = m.reasons_known || !m.reason_fraction.empty();
  return f;
}

nlohmann::json evidence_of(const Measurement& m, const Facts& f) {
  return {
      {"steps", m.steps},
      {"window_s", round2(m.window_end_s - m.window_start_s)},
      {"mean_util_pct", opt1(m.mean_util_pct)},
      {"avg_power_W", round1(m.avg_power_W)},
      {"p95_power_W", round1(m.p95_power_W)},
      {"enforced_limit_W", opt1(f.limit_W)},
      {"power_of_limit_pct",
       f.power_ratio ? nlohmann::json(round1(100 * *f.power_ratio)) : nullptr},
      {"mean_sm_MHz", opt1(m.mean_sm_MHz)},
      {"max_sm_MHz", opt1(f.max_sm_MHz)},
      {"sm_of_max_pct", f.sm_ratio ? nlohmann::json(round1(100 * *f.sm_ratio)) : nullptr},
      {"sw_power_cap_time_pct", round1(100 * f.cap_frac)},
      {"thermal_time_pct", round1(100 * f.thermal_frac)},
      {"hw_slowdown_time_pct", round1(100 * f.hw_slowdown_frac)},
      {"idle_reason_time_pct", round1(100 * f.idle_frac)},
      {"max_temp_C", opt1(m.max_temp_C)},
      {"slowdown_temp_C", opt1(f.slowdown_C)},
      {"reasons_known", f.reasons_known},
  };
}

nlohmann::json limiting_reasons_json(const Measurement& m, double material_share) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [bit, share] : m.reason_fraction)
    if ((bit & kLimitingReasons) && share >= material_share)
      j[reason_name(bit)] = round1(100 * share);
  return j;
}

struct Verdict {
  Regime regime;
  double margin;                          // how far inside the rule's region, about -1..1
  std::string rule;                       // the rule that decided, in words with numbers
  std::optional<Regime> borderline_with;  // the neighbour it nearly was
  std::string borderline_why;             // what made it borderline, in words
};

// Idle: no steps and (almost) no kernels running, by utilization or else by the idle reason.
std::optional<Verdict> idle_verdict(const Measurement& m, const Facts& f) {
  const std::optional<double> util = m.mean_util_pct;
  if (m.steps == 0 && util && *util < kIdleUtilPct)
    return Verdict{Regime::Idle, (kIdleUtilPct - *util) / kIdleUtilPct,
                   fmt::format("no steps and utilization {:.1f}% < {}%", *util, kIdleUtilPct),
                   std::nullopt, ""};
  if (m.steps == 0 && !util && f.idle_frac >= kIdleReasonFraction)
    return Verdict{
        Regime::Idle, (f.idle_frac - kIdleReasonFraction) / (1 - kIdleReasonFraction),
        fmt::format("no steps and the idle reason active {:.0f}% of the time", 100 * f.idle_frac),
        std::nullopt, ""};
  return std::nullopt;
}

// Thermal-bound: the thermal reasons were active, at least as long as the power cap was (the
// counters say what held the clocks). Without counters, falling clocks near the slowdown
// temperature are taken as heat.
std::optional<Verdict> thermal_verdict(const Measurement& m, const Facts& f,
                                       const ClassifyThresholds& th) {
  if (f.thermal_frac >= th.thermal_reason_fraction && f.thermal_frac >= f.cap_frac) {
    Verdict v{Regime::ThermalBound, (f.thermal_frac - th.thermal_reason_fraction) / 0.4,
              fmt::format("thermal clocks-event reasons active {:.0f}% of the time (>= {:.0f}%)",
                          100 * f.thermal_frac, 100 * th.thermal_reason_fraction),
              std::nullopt, ""};
    if (f.cap_frac >= th.thermal_reason_fraction) {
      v.borderline_with = Regime::CapBound;
      v.borderline_why =
          fmt::format("the SW power cap was active {:.0f}% of the time as well", 100 * f.cap_frac);
    }
    return v;
  }
  if (!f.reasons_known && f.slowdown_C && m.max_temp_C &&
      *m.max_temp_C >= *f.slowdown_C - kThermalMargin_C && m.p05_sm_MHz && f.max_sm_MHz &&
      *m.p05_sm_MHz < kFallingClockRatio * *f.max_sm_MHz)
    return Verdict{Regime::ThermalBound,
                   (*m.max_temp_C - (*f.slowdown_C - kThermalMargin_C)) / kThermalMargin_C,
                   fmt::format("temperature {:.0f} C within {} C of the {:.0f} C slowdown "
                               "threshold, clocks falling to {:.0f} MHz (p05); the trace has no "
                               "reason counters to say what held them",
                               *m.max_temp_C, kThermalMargin_C, *f.slowdown_C, *m.p05_sm_MHz),
                   std::nullopt, ""};
  return std::nullopt;
}

// Power near the limit (>= kCapPowerRatio of it); false when either is unknown.
bool power_near_limit(const Facts& f) { return f.power_ratio && *f.power_ratio >= kCapPowerRatio; }

// Cap-bound: the firmware power cap governs the clocks, by its reason or by power at the limit
// with clocks below max.
std::optional<Verdict> cap_verdict(const Measurement& m, const Facts& f,
                                   const ClassifyThresholds& th) {
  const std::optional<double> util = m.mean_util_pct;
  const bool clocks_below_max = f.sm_ratio && *f.sm_ratio < kClocksAtMaxRatio;
  const bool near_limit = power_near_limit(f);
  const bool by_reason = f.cap_frac >= th.cap_reason_fraction;
  if (!by_reason && !(near_limit && clocks_below_max)) return std::nullopt;
  double margin = (f.cap_frac - th.cap_reason_fraction) / (1 - th.cap_reason_fraction);
  if (near_limit) margin = std::max(margin, (*f.power_ratio - kCapPowerRatio) / 0.04);
  if (!clocks_below_max) margin -= 0.5;  // a cap that does not lower clocks is doubtful
  Verdict v{Regime::CapBound, margin,
            by_reason ? fmt::format("SW power cap active {:.0f}% of the time (>= {:.0f}%)",
                                    100 * f.cap_frac, 100 * th.cap_reason_fraction)
                      : fmt::format("mean power {:.0f}% of the limit (>= {:.0f}%) with clocks at "
                                    "{:.0f}% of max",
                                    100 * *f.power_ratio, 100 * kCapPowerRatio, 100 * *f.sm_ratio),
            std::nullopt, ""};
  if (f.thermal_frac >= th.thermal_reason_fraction) {
    v.borderline_with = Regime::ThermalBound;
    v.borderline_why = fmt::format("thermal reasons were active {:.0f}% of the time as well",
                                   100 * f.thermal_frac);
  } else if (f.reasons_known && f.cap_frac < th.cap_reason_fraction + kBorderlineCapShare) {
    v.borderline_with = Regime::Headroom;
    v.borderline_why =
        fmt::format("the SW power cap was active only {:.0f}% of the time", 100 * f.cap_frac);
  } else if (util && *util < kUnderutilizedPct + kBorderlineUtilPct) {
    v.borderline_with = Regime::Underutilized;
    v.borderline_why = fmt::format("the GPU was busy only {:.0f}% of the time", *util);
  }
  return v;
}

// Underutilized: kernels run less than half the time.
std::optional<Verdict> underutilized_verdict(const Measurement& m) {
  const std::optional<double> util = m.mean_util_pct;
  if (!(util && *util < kUnderutilizedPct)) return std::nullopt;
  Verdict v{Regime::Underutilized, (kUnderutilizedPct - *util) / 40,
            fmt::format("utilization {:.1f}% < {}%", *util, kUnderutilizedPct), std::nullopt, ""};
  if (*util >= kUnderutilizedPct - kBorderlineUtilPct) {
    v.borderline_with = Regime::Headroom;
    v.borderline_why =
        fmt::format("utilization {:.1f}% is close to the {}% line", *util, kUnderutilizedPct);
  }
  return v;
}

// Headroom, what is left: busy, no limiting reason most of the time, power under the limit,
// clocks at max. Its margin is the tightest of those.
Verdict headroom_verdict(const Measurement& m, const Facts& f, const ClassifyThresholds& th) {
  const std::optional<double> util = m.mean_util_pct;
  double margin = 1;
  std::string rule = "busy GPU, no limiting reason most of the time";
  if (util) margin = std::min(margin, (*util - kUnderutilizedPct) / 40);
  if (f.power_ratio) {
    margin = std::min(margin,
                      (kCapPowerRatio - *f.power_ratio) / (kCapPowerRatio - kHeadroomPowerRatio));
    rule += fmt::format(", power {:.0f}% of the limit", 100 * *f.power_ratio);
  } else {
    margin = std::min(margin, 0.0);  // without power the headroom is a guess
  }
  if (f.sm_ratio) {
    margin = std::min(margin, (*f.sm_ratio - (kClocksAtMaxRatio - 0.05)) / 0.05);
    rule += fmt::format(", SM clock {:.0f}% of max", 100 * *f.sm_ratio);
  }
  Verdict v{Regime::Headroom, margin, rule, std::nullopt, ""};
  if (f.cap_frac >= th.material_reason_share || power_near_limit(f)) {
    v.borderline_with = Regime::CapBound;
    v.borderline_why =
        f.cap_frac >= th.material_reason_share
            ? fmt::format("the SW power cap was active {:.0f}% of the time{}", 100 * f.cap_frac,
                          f.power_ratio
                              ? fmt::format(" at {:.0f}% of the limit", 100 * *f.power_ratio)
                              : std::string())
            : fmt::format("power is {:.0f}% of the limit", 100 * *f.power_ratio);
    v.margin = std::min(v.margin, 0.0);
  } else if (util && *util < kUnderutilizedPct + kBorderlineUtilPct) {
    v.borderline_with = Regime::Underutilized;
    v.borderline_why = fmt::format("the GPU was busy only {:.0f}% of the time", *util);
  }
  return v;
}

// The rules in order of precedence: the first that applies decides.
Verdict decide(const Measurement& m, const Facts& f, const ClassifyThresholds& th) {
  if (std::optional<Verdict> v = idle_verdict(m, f)) return *v;
  if (std::optional<Verdict> v = thermal_verdict(m, f, th)) return *v;
  if (std::optional<Verdict> v = cap_verdict(m, f, th)) return *v;
  if (std::optional<Verdict> v = underutilized_verdict(m)) return *v;
  return headroom_verdict(m, f, th);
}

// What a borderline verdict means for a cap.
std::string borderline_advice(Regime r, Regime with, const Measurement& m, const Facts& f) {
  const double limit = f.limit_W.value_or(0);
  if ((r == Regime::Headroom && with == Regime::CapBound) ||
      (r == Regime::CapBound && with == Regime::Headroom))
    return fmt::format(
        " Borderline: the power cap already acts part of the time, so a cap just under the "
        "{:.0f} W limit binds more often and slows the work; whether a lower cap saves energy is a "
        "question for a sweep from about {:.0f} W down.",
        limit, 10 * std::round(m.avg_power_W / 10));
  if (with == Regime::ThermalBound || r == Regime::ThermalBound)
    return " Borderline: both the power cap and heat hold the clocks back; a lower cap also "
           "cools the card, so it may end the thermal slowdown, but past that point it only "
           "slows the work.";
  if (with == Regime::Underutilized || r == Regime::Underutilized)
    return " Borderline: the GPU waits a good part of the time, so a cap changes energy per step "
           "less than the power figures suggest.";
  return "";
}

std::string advice_for(Regime r, const Measurement& m, const Facts& f) {
  const double limit = f.limit_W.value_or(0);
  switch (r) {
    case Regime::CapBound:
      return fmt::format(
          "The firmware already trades clocks for power at the {:.0f} W limit: a lower cap slows "
          "the work; energy per step may fall a little and then rises past a threshold. Sweep "
          "down from {:.0f} W. A thermal controller cannot help.",
          limit, limit);
    case Regime::ThermalBound:
      return "Heat is limiting the clocks (thermal slowdown): a lower cap, or a thermal "
             "controller that lowers it while the card is hot (regime control --policy "
             "regime-gated, docs/control.md), may stop the throttling. Sweep caps down from the "
             "limit.";
    case Regime::Headroom:
      return fmt::format(
          "The GPU is busy at full clocks and draws {:.0f} W (p95 {:.0f} W) of the {:.0f} W "
          "limit: caps above the observed draw change nothing. Sweep from about {:.0f} W "
          "downward.",
          m.avg_power_W, m.p95_power_W, limit, 10 * std::round(m.avg_power_W / 10));
    case Regime::Underutilized:
      return "The GPU waits most of the time: capping barely matters. The waste is elsewhere: "
             "the input pipeline, the batch size, or the clocks.";
    case Regime::Idle:
      return "No work ran on the GPU: nothing to do.";
  }
  return "";
}

}  // namespace

std::string too_short_to_classify(const Measurement& m) {
  const double window_s = m.window_end_s - m.window_start_s;
  if (window_s < kMinWindow_s)
    return fmt::format("the measured window is {:.2f} s, under the {:g} s a regime needs", window_s,
                       kMinWindow_s);
  if (!m.per_second && m.steps < kMinSteps)
    return fmt::format("{} step(s) were measured, under the {} a regime needs", m.steps, kMinSteps);
  return "";
}

RegimeReport classify(const Measurement& m, const GpuInfo& gpu) {
  return classify(m, gpu, ClassifyThresholds{});
}

RegimeReport classify(const Measurement& m, const GpuInfo& gpu, const ClassifyThresholds& th) {
  const Facts f = facts_of(m, gpu);
  const Verdict v = decide(m, f, th);
  RegimeReport r;
  r.regime = v.regime;
  double confidence = confidence_from(v.margin);
  const double window_s = m.window_end_s - m.window_start_s;
  const bool short_run = window_s < kShortRun_s || (!m.per_second && m.steps < kShortRunSteps);
  if (short_run) confidence *= 0.8;
  r.confidence = round2(confidence);
  r.evidence = evidence_of(m, f);
  const std::string active = material_reasons(m, th.material_reason_share);
  // Every limiting reason active for a material share is named, whichever rule decided.
  r.evidence["rule"] =
      active.empty() ? v.rule : fmt::format("{}; limiting reasons active: {}", v.rule, active);
  r.evidence["limiting_reasons_pct"] = limiting_reasons_json(m, th.material_reason_share);
  r.evidence["short_run"] = short_run;
  r.evidence["borderline_with"] =
      v.borderline_with ? nlohmann::json(to_string(*v.borderline_with)) : nlohmann::json(nullptr);
  if (v.borderline_with) {
    r.evidence["borderline"] = v.borderline_why;
    r.evidence["rule"] = fmt::format("borderline {} / {}: {} ({})", to_string(v.regime),
                                     to_string(*v.borderline_with),
                                     r.evidence["rule"].get<std::string>(), v.borderline_why);
  }
  r.advice = advice_for(v.regime, m, f);
  if (v.borderline_with) r.advice += borderline_advice(v.regime, *v.borderline_with, m, f);
  r.measurement = m;
  return r;
}

RegimeReport classify(const Measurement& m, const GpuInfo& gpu, const GpuSpecOverrides& o) {
  return classify(m, apply_overrides(gpu, o));
}

RegimeOrWhy classify_if_long_enough(const Measurement& m, const GpuInfo& gpu) {
  RegimeOrWhy out;
  out.too_short = too_short_to_classify(m);
  if (out.too_short.empty()) out.report = classify(m, gpu);
  return out;
}

nlohmann::json to_json(const RegimeReport& r) {
  nlohmann::json out = {{"regime", to_string(r.regime)},
                        {"confidence", r.confidence},
                        {"advice", r.advice},
                        {"evidence", r.evidence},
                        {"measurement", to_json(r.measurement)}};
  add_phases_json(r, out);
  return out;
}

namespace {

std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// One aligned "label  value" line of the report.
std::string line(const std::string& label, const std::string& value) {
  return fmt::format("  {:<18}{}\n", label, value);
}

std::string or_na(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("n/a");
}

}  // namespace

std::string format_report(const RegimeReport& r) {
  const Measurement& m = r.measurement;
  const nlohmann::json with = r.evidence.value("borderline_with", nlohmann::json());
  std::string out =
      fmt::format("regime: {} ({}confidence {:.2f})\n", to_string(r.regime),
                  with.is_string() ? fmt::format("borderline with {}, ", with.get<std::string>())
                                   : std::string(),
                  r.confidence);
  out += fmt::format("  because: {}\n", value_text(r.evidence.value("rule", nlohmann::json())));
  out += fmt::format("  advice:  {}\n\n", r.advice);
  out += format_phases(r);
  out += fmt::format("measurement (steady window {:.2f} s, gpu {}, {} samples):\n",
                     m.window_end_s - m.window_start_s, m.gpu, m.samples);
  if (m.per_second) {
    out += "  no steps: figures per second of the window\n";
  } else {
    out += line("steps", fmt::format("{}", m.steps));
    out += line("time per step",
                fmt::format("{:.2f} ms  [{:.2f}, {:.2f}] 95% CI (median)", 1e3 * m.time_per_step_s,
                            1e3 * m.time_per_step_ci_s.first, 1e3 * m.time_per_step_ci_s.second));
  }
  out += line(m.per_second ? "energy per second" : "energy per step",
              fmt::format("{:.2f} J  [{:.2f}, {:.2f}] 95% CI, from {}", m.energy_per_step_J,
                          m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second,
                          energy_source_name(m.energy_source)));
  out += line("power", fmt::format("{:.1f} W mean, {:.1f} W p95, limit {} W", m.avg_power_W,
                                   m.p95_power_W, or_na(m.mean_limit_W, "{:.0f}")));
  if (!m.window_power_W.empty())
    out += line("power windows",
                fmt::format("{} x {} s: median {:.0f} W, p99 {:.0f} W, max {:.0f} W ({})",
                            m.window_power_W.size(), m.window_power_s,
                            percentile(m.window_power_W, 50), percentile(m.window_power_W, 99),
                            m.window_power_W.back(), m.window_power_source));
  out += line("SM clock", fmt::format("{} MHz mean, {} MHz p05, {} MHz max seen",
                                      or_na(m.mean_sm_MHz, "{:.0f}"), or_na(m.p05_sm_MHz, "{:.0f}"),
                                      or_na(m.max_sm_MHz_seen, "{:.0f}")));
  out += line("temperature", fmt::format("{} C mean, {} C max", or_na(m.mean_temp_C, "{:.1f}"),
                                         or_na(m.max_temp_C, "{:.0f}")));
  out += line("utilization", fmt::format("{} %", or_na(m.mean_util_pct, "{:.1f}")));
  if (!m.reason_fraction.empty()) {
    std::string limits;
    for (const auto& [bit, share] : m.reason_fraction)
      limits +=
          fmt::format("{}{} {:.0f}%", limits.empty() ? "" : ", ", reason_name(bit), 100 * share);
    out += line("clock limits", limits + " of the time");
  }
  out += line("steady state", m.steady_state_rule);
  out += "\nevidence:\n";
  for (const auto& [key, value] : r.evidence.items())
    if (key != "rule") out += fmt::format("  {:<24}{}\n", key, value_text(value));
  return out;
}

}  // namespace regime
