#include "session/control.hpp"

#include <fmt/core.h>

#include <set>

#include "act/power_limit_guard.hpp"
#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace {

constexpr double kDefaultProbe_s = 60;

void validate(const ControlRequest& r) {
  session::validate(r.workload,
                    "regime control --device nvml:0 --actuate --policy regime-gated -- python3 "
                    "train.py");
  if (!(r.seconds > 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--seconds must be > 0, got {}", r.seconds));
  if (!(r.sample_ms >= 1 && r.sample_ms <= 10000))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--sample-ms must be in [1, 10000] ms, got {}", r.sample_ms));
  if (r.warmup_s && !(*r.warmup_s >= 0 && *r.warmup_s < r.seconds))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--warmup-s must be in [0, --seconds) = [0, {}), got {}", r.seconds,
                            *r.warmup_s));
}

// The card's thermal time constant from data/gpus, when Regime knows the model.
std::optional<double> time_constant_s(const GpuInfo& info) {
  try {
    return twin::load_gpu_spec(info.name).thermal_time_constant_s;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// regime-gated's own keys taken out; the rest configure the inner controller.
control::PolicySpec inner_spec(const control::PolicySpec& gated, double& probe_s) {
  control::PolicySpec inner{"thermal", gated.params};
  auto in = inner.params.find("inner");
  if (in != inner.params.end()) {
    if (in->second != "thermal")
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--policy regime-gated: inner='{}': the only inner controller is "
                              "thermal",
                              in->second));
    inner.params.erase(in);
  }
  probe_s = control::number_param(gated, "probe_s").value_or(kDefaultProbe_s);
  inner.params.erase("probe_s");
  return inner;
}

MeasureOptions measure_options(const ControlRequest& r) {
  MeasureOptions mo;
  if (r.warmup_s) {
    mo.detect_steady_state = false;
    mo.warmup_s = *r.warmup_s;
  }
  return mo;
}

}  // namespace

std::string gate_reason(const RegimeReport& report, const GpuInfo& info) {
  switch (report.regime) {
    case Regime::ThermalBound:
      if (report.measurement.avg_power_W < info.min_limit_W)
        return fmt::format(
            "thermal-bound, but the card already draws {:.1f} W, under the lowest limit {:.0f} "
            "W: no limit the controller may set would bind; heat is a matter of cooling here",
            report.measurement.avg_power_W, info.min_limit_W);
      return "";
    case Regime::CapBound:
      return "cap-bound: the firmware already holds power at the limit; temperature control "
             "cannot lower energy per step";
    case Regime::Headroom:
      return "headroom: the GPU runs at full clocks below its limit and is not throttled by "
             "heat; temperature control has nothing to act on";
    case Regime::Underutilized:
      return "underutilized: the GPU waits most of the time; the power limit barely matters";
    case Regime::Idle:
      return "idle: no work ran on the GPU";
  }
  return "unknown regime";
}

ControlReport run_control(const ControlRequest& r) {
  validate(r);
  control::PolicySpec spec = control::parse_policy(r.policy);
  if (spec.name != "thermal" && spec.name != "regime-gated")
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy '{}': unknown policy (expected thermal[:k=v,...] or "
                            "regime-gated[:inner=thermal,probe_s=S,k=v,...])",
                            spec.name));
  const bool gated = spec.name == "regime-gated";
  Target target = open_target(r.device);
  Gpu& gpu = target.gpu();
  ControlReport rep;
  rep.device = target.uri();
  rep.workload = r.workload.display_name();
  rep.policy = r.policy;
  rep.simulated = target.simulated();
  rep.info = gpu.info();
  rep.limit_before_W = rep.info.current_limit_W;
  control::ThermalParams defaults = control::thermal_defaults(rep.info, time_constant_s(rep.info));
  rep.thermal = control::thermal_params(gated ? inner_spec(spec, rep.probe_s) : spec, defaults);
  if (gated && !(rep.probe_s >= 10 && rep.probe_s < r.seconds))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--policy regime-gated: probe_s must be in [10, --seconds) = [10, "
                            "{}) s, got {}",
                            r.seconds, rep.probe_s));
  ActuationPolicy policy = ActuationPolicy::from_flags(r.actuate);
  // thermal changes the limit from the start: refuse before any work runs.
  if (!gated) check_actuation(policy, rep.info, gpu.is_physical(), rep.info.current_limit_W);

  WorkloadPtr work = target.make_workload(r.workload);
  PowerLimitGuard guard(gpu, policy);
  Trace trace;
  RunStats stats;
  try {
    RunOptions ro;
    ro.duration_s = r.seconds;
    ro.sample_period_s = r.sample_ms / 1000.0;
    RunLoop loop(gpu, *work, ro, target.clock());
    loop.start();
    const double t0 = loop.now_s();
    rep.engaged = !gated;
    rep.reason = gated ? "" : "thermal: controlling from the start";
    if (gated) {
      RunEnd end =
          loop.run_until([&](const Trace&, double now) { return now >= t0 + rep.probe_s; });
      if (end != RunEnd::StopRequested)
        throw WorkloadFailed(fmt::format("the workload ended during the {:.0f} s probe of "
                                         "regime-gated",
                                         rep.probe_s),
                             work->exit_status());
      // The probe finds its own steady window: --warmup-s is for the whole run.
      Measurement m = measure_window(loop.trace(), t0, loop.now_s());
      rep.probe = classify(m, rep.info);
      rep.reason = gate_reason(*rep.probe, rep.info);
      rep.engaged = rep.reason.empty();
      if (rep.engaged) {
        rep.reason = fmt::format(
            "thermal-bound (confidence {:.2f}): heat limits the clocks; engaging thermal control",
            rep.probe->confidence);
        check_actuation(policy, rep.info, gpu.is_physical(), rep.info.current_limit_W);
      }
    }
    RunEnd end = RunEnd::Duration;
    if (rep.engaged) {
      control::ThermalController controller(rep.thermal);
      control::LimitBounds bounds{rep.thermal.min_W, rep.thermal.max_W, rep.thermal.step_W,
                                  rep.thermal.period_s};
      control::ControlLoop cl(loop, guard, controller, bounds, rep.info.current_limit_W);
      end = cl.run();
      rep.actions = cl.actions();
    } else {
      end = loop.run_until([](const Trace&, double) { return false; });
    }
    trace = loop.finish(&stats);
    // A command that ends by itself before --seconds is fine when it succeeded: the run is
    // judged on what ran. A failing one passes its status on.
    std::optional<int> status = work->exit_status();
    if (end == RunEnd::WorkloadFinished && status && *status != 0)
      throw WorkloadFailed(fmt::format("the workload failed with exit status {} after {:.1f} s",
                                       *status, stats.t_end_s - stats.t_start_s),
                           status);
  } catch (const WorkloadFailed& e) {
    guard.restore();
    throw WorkloadFailed(std::string(e.what()) + "; the original power limit was restored",
                         e.exit_status);
  }
  guard.restore();
  rep.limit_after_W = gpu.info().current_limit_W;
  rep.duration_s = stats.t_end_s - stats.t_start_s;
  rep.measurement = measure(trace, measure_options(r));
  return rep;
}

nlohmann::json to_json(const ControlReport& r) {
  const Measurement& m = r.measurement;
  nlohmann::json actions = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  for (const auto& a : r.actions)
    actions.push_back({{"t_s", a.t_s},
                       {"temp_C", opt(a.temp_C)},
                       {"power_W", opt(a.power_W)},
                       {"old_limit_W", a.old_limit_W},
                       {"limit_W", a.new_limit_W},
                       {"why", a.why}});
  const control::ThermalParams& p = r.thermal;
  return {{"device", r.device},
          {"gpu", r.info.name},
          {"workload", r.workload},
          {"policy", r.policy},
          {"engaged", r.engaged},
          {"reason", r.reason},
          {"probe_s", r.probe_s},
          {"regime", r.probe ? nlohmann::json(to_string(r.probe->regime)) : nullptr},
          {"probe", r.probe ? regime::to_json(*r.probe) : nlohmann::json(nullptr)},
          {"thermal",
           {{"target_C", p.target_C},
            {"band_C", p.band_C},
            {"step_W", p.step_W},
            {"period_s", p.period_s},
            {"dwell_s", p.dwell_s},
            {"min_W", p.min_W},
            {"max_W", p.max_W}}},
          {"energy_per_step_J", m.energy_per_step_J},
          {"energy_per_step_ci_J", {m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second}},
          {"time_per_step_s", m.time_per_step_s},
          {"time_per_step_ci_s", {m.time_per_step_ci_s.first, m.time_per_step_ci_s.second}},
          {"actions", actions},
          {"limit_before_W", r.limit_before_W},
          {"limit_after_W", r.limit_after_W},
          {"duration_s", r.duration_s},
          {"simulated", r.simulated},
          {"measurement", regime::to_json(m)}};
}

}  // namespace regime::session
