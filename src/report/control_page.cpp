#include "report/control_page.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "common/error.hpp"
#include "report/restore.hpp"

namespace regime::report {

namespace {

using nlohmann::json;

// A GPU's own run in the record: the record itself for one GPU, its entry in `gpus` for a job.
const json& lane_of(const json& report, size_t gpu) {
  if (report.contains("gpus") && report["gpus"].is_array() && gpu < report["gpus"].size())
    return report["gpus"][gpu];
  return report;
}

json value_or_null(const json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : json();
}

double number_or(const json& j, const char* key, double fallback) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// The controller's changes of the limit (would-be changes in a dry run), times from t0_s.
json actions_data(const json& lane, double t0_s) {
  json out = json::array();
  if (!lane.contains("actions") || !lane["actions"].is_array()) return out;
  for (const json& a : lane["actions"])
    out.push_back({{"t_s", number_or(a, "t_s", 0) - t0_s},
                   {"old_limit_W", value_or_null(a, "old_limit_W")},
                   {"limit_W", value_or_null(a, "limit_W")},
                   {"applied", a.value("applied", false)},
                   {"temp_C", value_or_null(a, "temp_C")},
                   {"power_W", value_or_null(a, "power_W")},
                   {"why", a.value("why", std::string())}});
  return out;
}

json figures_data(const std::vector<WindowFigures>& figures, double t0_s) {
  json rows = json::array();
  bool evaluation = false;
  for (const WindowFigures& w : figures) {
    evaluation = evaluation || w.kind != "segment";
    rows.push_back({{"kind", w.kind},
                    {"t0_s", w.t0_s - t0_s},
                    {"t1_s", w.t1_s - t0_s},
                    {"steps", w.steps},
                    {"per", w.per_second ? "second" : "step"},
                    {"energy_per_step_J", w.energy_per_step_J},
                    {"energy_per_step_ci_J", {w.energy_lo_J, w.energy_hi_J}},
                    {"time_per_step_s", w.time_per_step_s},
                    {"time_per_step_ci_s", {w.time_lo_s, w.time_hi_s}},
                    {"avg_power_W", w.avg_power_W},
                    {"mean_temp_C", w.mean_temp_C ? json(*w.mean_temp_C) : json()},
                    {"mean_limit_W", w.mean_limit_W ? json(*w.mean_limit_W) : json()}});
  }
  return {{"kind", figures.empty() ? json() : json(evaluation ? "evaluation" : "segments")},
          {"rows", rows}};
}

// The evaluation's verdict and changes, where the run was evaluated and the controller engaged.
json evaluation_data(const json& report) {
  if (!report.contains("verdict") || report["verdict"].is_null()) return nullptr;
  json out = json::object();
  for (const char* k : {"verdict", "energy_change_pct", "energy_change_ci_pct", "time_change_pct",
                        "time_change_ci_pct", "baseline", "controlled"})
    out[k] = value_or_null(report, k);
  const json& ev = value_or_null(report, "evaluation");
  for (const char* k : {"lead_in_s", "window_s", "settle_s", "dof"}) out[k] = value_or_null(ev, k);
  return out;
}

// What the run did to the limit: put back (the limit read after the run is the one before it),
// never changed, or left otherwise.
json restore_data(const ControlRunRecord& run, const json& lane, const std::string& gpu_label,
                  const std::vector<Sample>& samples) {
  bool changed = false;
  if (lane.contains("actions"))
    for (const json& a : lane["actions"]) changed = changed || a.value("applied", false);
  const json before = value_or_null(lane, "limit_before_W");
  if (changed && before.is_number() && before == value_or_null(lane, "limit_after_W"))
    return limit_restore_section(LimitRestored{gpu_label, before.get<double>(), run.started_at_utc},
                                 {}, gpu_label);
  std::vector<double> limits_W;
  for (const Sample& s : samples)
    if (s.limit_W) limits_W.push_back(*s.limit_W);
  return limit_restore_section(std::nullopt, limits_W, gpu_label);
}

}  // namespace

std::string control_trace_file(const ControlRunRecord& run, size_t gpu) {
  const json& files = run.report.is_object() && run.report.contains("trace")
                          ? value_or_null(run.report["trace"], "files")
                          : json();
  if (!files.is_array() || gpu >= files.size() || !files[gpu].is_string())
    throw Error(ErrorKind::NotFound,
                fmt::format("control:{} names no trace file{}: only control runs kept since they "
                            "write their trace can be drawn",
                            run.id, gpu > 0 ? fmt::format(" for GPU {}", gpu) : ""));
  return files[gpu].get<std::string>();
}

size_t control_gpu_named(const ControlRunRecord& run, const std::string& selector) {
  const json& gpus = value_or_null(run.report, "gpus");
  const size_t lanes = gpus.is_array() ? gpus.size() : 1;
  std::vector<std::string> devices;
  std::vector<size_t> containing;
  for (size_t i = 0; i < lanes; ++i) {
    const json& lane = lane_of(run.report, i);
    const std::string device = lane.value("device", run.device);
    if (device == selector) return i;
    devices.push_back(device);
    for (const std::string& text :
         {device, lane.value("gpu", run.gpu_name), lane.value("uuid", run.gpu_uuid)})
      if (!selector.empty() && text.find(selector) != std::string::npos) {
        containing.push_back(i);
        break;
      }
  }
  if (containing.size() == 1) return containing.front();
  std::string listed;
  for (const std::string& d : devices) listed += (listed.empty() ? "" : ", ") + d;
  throw Error(ErrorKind::NotFound,
              fmt::format("control:{}: {} of its GPUs ({}) match --gpu '{}': give one's device",
                          run.id, containing.empty() ? "none" : "several", listed, selector));
}

json build_control_page_data(const ControlRunRecord& run, size_t gpu, const Trace& trace,
                             const std::vector<WindowFigures>& figures,
                             const PageOptions& options) {
  const json& report = run.report;
  const json& lane = lane_of(report, gpu);
  const std::string trace_path = control_trace_file(run, gpu);
  const std::vector<Sample> samples = trace.samples.empty()
                                          ? std::vector<Sample>{}
                                          : samples_of_gpu(trace, trace.samples.front().gpu);
  if (samples.empty())
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("control:{}: the trace {} holds no sample", run.id, trace_path));
  const json& m = value_or_null(report, "measurement");
  const json timeline =
      timeline_data(samples, trace, value_or_null(lane, "measurement"), options.columns, true);
  const double t0_s = timeline["t0_s"].get<double>();
  const std::string gpu_name = lane.value("gpu", run.gpu_name);
  const std::string gpu_uuid = lane.value("uuid", run.gpu_uuid);
  const std::string gpu_device = lane.value("device", run.device);
  const std::string gpu_label = (gpu_name.empty() ? gpu_device : gpu_name) +
                                (gpu_uuid.empty() ? std::string() : fmt::format(" ({})", gpu_uuid));
  const json& probe = value_or_null(lane, "probe");
  const json& files = report["trace"]["files"];

  return {
      {"title", files.size() > 1
                    ? fmt::format("Regime control run {}: {} on {} ({}, GPU {} of {})", run.id,
                                  run.workload, gpu_device, gpu_name, gpu + 1, files.size())
                    : fmt::format("Regime control run {}: {} on {}", run.id, run.workload,
                                  run.gpu_name.empty() ? run.device : run.gpu_name)},
      {"generated_utc", options.generated_utc},
      {"run",
       {{"id", fmt::format("control:{}", run.id)},
        {"device", run.device},
        {"gpu_name", run.gpu_name},
        {"gpu_uuid", run.gpu_uuid},
        {"workload", run.workload},
        {"started_at_utc", run.started_at_utc},
        {"status", "done"},
        {"trace_path", trace_path},
        {"steps_path", sibling_steps_path(trace_path).value_or("").string()}}},
      {"regime",
       {{"name", value_or_null(lane, "regime")},
        {"confidence", value_or_null(probe, "confidence")},
        {"advice", value_or_null(probe, "advice")},
        {"evidence", probe.is_object() ? value_or_null(probe, "evidence") : json::object()}}},
      {"measurement", m},
      {"timeline", timeline},
      {"comparison",
       {{"per", "step"},
        {"rows", json::array()},
        {"left_out_other_unit", 0},
        {"left_out_unmeasured", 0}}},
      {"restore", restore_data(run, lane, gpu_label, samples)},
      {"control",
       {{"policy", run.policy},
        {"engaged", lane.value("engaged", false)},
        {"reason", lane.value("reason", std::string())},
        {"dry_run", lane.value("dry_run", false)},
        {"dry_run_reason", value_or_null(lane, "dry_run_reason")},
        {"limit_before_W", value_or_null(lane, "limit_before_W")},
        {"limit_after_W", value_or_null(lane, "limit_after_W")},
        {"duration_s", value_or_null(report, "duration_s")},
        {"gpu", gpu},
        {"gpus", files.size()},
        {"trace_files", files},
        {"whole_s", value_or_null(report["trace"], "whole_s")},
        {"bucket_s", value_or_null(report["trace"], "bucket_s")},
        {"actions", actions_data(lane, t0_s)},
        {"figures", figures_data(figures, t0_s)},
        {"evaluation", evaluation_data(report)}}},
  };
}

}  // namespace regime::report
