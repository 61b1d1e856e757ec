#include "report/page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "common/error.hpp"
#include "report/downsample.hpp"
#include "report/restore.hpp"

namespace regime::report {

namespace {

using nlohmann::json;

json series_json(const std::vector<double>& t_s, const std::vector<double>& value, double t0_s,
                 size_t columns) {
  const Downsampled d = downsample_min_max(t_s, value, columns);
  std::vector<double> rel(d.t_s.size());
  std::transform(d.t_s.begin(), d.t_s.end(), rel.begin(), [&](double t) { return t - t0_s; });
  return {{"t_s", rel},
          {"value", d.value},
          {"input_points", d.input_points},
          {"points", d.t_s.size()},
          {"reduced", d.reduced}};
}

// The samples' field `f` where the device reported it.
template <typename F>
std::pair<std::vector<double>, std::vector<double>> field(const std::vector<Sample>& samples, F f) {
  std::pair<std::vector<double>, std::vector<double>> out;
  for (const Sample& s : samples) {
    const std::optional<double> v = f(s);
    if (!v) continue;
    out.first.push_back(s.t_s);
    out.second.push_back(*v);
  }
  return out;
}

const json& measurement_of(const RunRecord& r) {
  static const json kNull;
  if (r.report.is_object() && r.report.contains("measurement")) return r.report["measurement"];
  return r.measurement.is_object() ? r.measurement : kNull;
}

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string per_of(const json& m) {
  return m.is_object() && m.contains("per") && m["per"].is_string() ? m["per"].get<std::string>()
                                                                    : std::string("step");
}

bool measured(const RunRecord& r) {
  return r.status == "done" && number(measurement_of(r), "energy_per_step_J").has_value() &&
         number(measurement_of(r), "time_per_step_s").has_value();
}

json interval(const json& m, const char* key) {
  if (m.contains(key) && m[key].is_array() && m[key].size() == 2) return m[key];
  return nullptr;
}

json row_json(const RunRecord& r, bool current) {
  const json& m = measurement_of(r);
  return {{"id", r.id},
          {"current", current},
          {"gpu", r.gpu_name.empty() ? r.device : r.gpu_name},
          {"device", r.device},
          {"workload", r.workload},
          {"started_at_utc", r.started_at_utc},
          {"regime", r.regime ? json(*r.regime) : json(nullptr)},
          {"confidence", r.confidence ? json(*r.confidence) : json(nullptr)},
          {"energy_per_step_J", *number(m, "energy_per_step_J")},
          {"energy_per_step_ci_J", interval(m, "energy_per_step_ci_J")},
          {"time_per_step_s", *number(m, "time_per_step_s")},
          {"time_per_step_ci_s", interval(m, "time_per_step_ci_s")},
          {"avg_power_W", number(m, "avg_power_W") ? json(*number(m, "avg_power_W")) : json()}};
}

}  // namespace

json comparison_rows(const RunRecord& current, const std::vector<RunRecord>& store_runs) {
  const std::string per = per_of(measurement_of(current));
  const auto key = [](const RunRecord& r) {
    return std::make_pair(r.gpu_name.empty() ? r.device : r.gpu_name, r.workload);
  };
  std::map<std::pair<std::string, std::string>, const RunRecord*> newest;
  size_t other_unit = 0, unmeasured = 0;
  for (const RunRecord& r : store_runs) {
    if (r.id == current.id) continue;
    if (!measured(r)) {
      ++unmeasured;
      continue;
    }
    if (per_of(measurement_of(r)) != per) {
      ++other_unit;
      continue;
    }
    const auto k = key(r);
    if (k == key(current)) continue;  // the run shown stands for its own pair
    auto it = newest.find(k);
    if (it == newest.end() || it->second->id < r.id) newest[k] = &r;
  }
  std::vector<const RunRecord*> rows;
  if (measured(current)) rows.push_back(&current);
  for (const auto& [k, r] : newest) rows.push_back(r);
  std::sort(rows.begin(), rows.end(),
            [](const RunRecord* a, const RunRecord* b) { return a->id > b->id; });
  json out = json::array();
  for (const RunRecord* r : rows) out.push_back(row_json(*r, r->id == current.id));
  return {{"per", per},
          {"rows", out},
          {"left_out_other_unit", other_unit},
          {"left_out_unmeasured", unmeasured}};
}

json timeline_data(const std::vector<Sample>& samples, const Trace& trace, const json& m,
                   size_t cols, bool whole_limit) {
  const int gpu = samples.front().gpu;
  double t0_s = samples.front().t_s;
  if (!trace.power_points.empty()) t0_s = std::min(t0_s, trace.power_points.front().t_s);

  json series = json::object();
  std::string power_source;
  if (!trace.power_points.empty()) {
    std::vector<double> t, v;
    for (const PowerPoint& p : trace.power_points) {
      t.push_back(p.t_s);
      v.push_back(p.power_W);
    }
    series["power_W"] = series_json(t, v, t0_s, cols);
    power_source = "the driver's power buffer";
  } else {
    auto [t, v] = field(samples, [](const Sample& s) { return s.power_W; });
    power_source = "samples (instantaneous power)";
    if (t.empty()) {
      std::tie(t, v) = field(samples, [](const Sample& s) { return s.power_avg_W; });
      power_source = "samples (the driver's averaged power)";
    }
    series["power_W"] = series_json(t, v, t0_s, cols);
  }
  const auto add = [&](const char* name, auto f) {
    auto [t, v] = field(samples, f);
    series[name] = series_json(t, v, t0_s, cols);
  };
  {
    // Drawn from every point where the trace holds only its changes.
    auto [t, v] = field(samples, [](const Sample& s) { return s.limit_W; });
    series["limit_W"] = series_json(t, v, t0_s, whole_limit ? std::max(cols, t.size()) : cols);
  }
  add("temp_C", [](const Sample& s) { return s.temp_C; });
  add("sm_MHz", [](const Sample& s) { return s.sm_MHz; });
  {
    std::vector<double> t, v;
    for (const Step& s : trace.steps) {
      t.push_back(s.t_start_s);
      v.push_back(s.duration_s() * 1e3);
    }
    series["step_ms"] = series_json(t, v, t0_s, cols);
  }

  json window = nullptr;
  if (auto a = number(m, "window_start_s"), b = number(m, "window_end_s"); a && b)
    window = {*a - t0_s, *b - t0_s};
  return {{"t0_s", t0_s},       {"gpu", gpu},
          {"columns", cols},    {"power_source", power_source},
          {"window_s", window}, {"steps", trace.steps.size()},
          {"series", series}};
}

json phase_bands(const json& report, double t0_s) {
  json out = json::array();
  if (!report.is_object() || !report.contains("phases") || !report["phases"].is_array()) return out;
  for (const json& p : report["phases"]) {
    if (!p.is_object() || !p.contains("regime") || !p["regime"].is_string() ||
        !p.contains("spans") || !p["spans"].is_array())
      continue;
    json spans = json::array();
    for (const json& s : p["spans"])
      if (s.is_array() && s.size() == 2 && s[0].is_number() && s[1].is_number())
        spans.push_back({s[0].get<double>() - t0_s, s[1].get<double>() - t0_s});
    if (spans.empty()) continue;
    out.push_back({{"regime", p["regime"]},
                   {"energy_fraction", p.value("energy_fraction", json())},
                   {"time_fraction", p.value("time_fraction", json())},
                   {"avg_power_W", p.value("avg_power_W", json())},
                   {"steps", p.value("steps", json())},
                   {"spans_s", spans}});
  }
  return out;
}

std::vector<Sample> samples_of_gpu(const Trace& trace, int gpu) {
  std::vector<Sample> samples;
  std::copy_if(trace.samples.begin(), trace.samples.end(), std::back_inserter(samples),
               [&](const Sample& s) { return s.gpu == gpu; });
  return samples;
}

namespace {

void require_report(const RunRecord& run) {
  if (!run.report.is_object() || !run.report.contains("regime"))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("run {} has no report (status {}): only a finished, measured run "
                            "can be shown",
                            run.id, run.status));
}

std::string gpu_label(const RunRecord& run) {
  return (run.gpu_name.empty() ? run.device : run.gpu_name) +
         (run.gpu_uuid.empty() ? std::string() : fmt::format(" ({})", run.gpu_uuid));
}

// Everything of a run's page but its timeline and what became of the limit.
json page_without_timeline(const RunRecord& run, const std::vector<RunRecord>& store_runs,
                           const PageOptions& options) {
  const json& r = run.report;
  return {
      {"title", fmt::format("Regime run {}: {} on {}", run.id, run.workload,
                            run.gpu_name.empty() ? run.device : run.gpu_name)},
      {"generated_utc", options.generated_utc},
      {"run",
       {{"id", run.id},
        {"device", run.device},
        {"gpu_name", run.gpu_name},
        {"gpu_uuid", run.gpu_uuid},
        {"workload", run.workload},
        {"started_at_utc", run.started_at_utc},
        {"status", run.status},
        {"trace_path", run.trace_path},
        {"steps_path", run.steps_path}}},
      {"regime",
       {{"name", r["regime"]},
        {"confidence", r.value("confidence", json())},
        {"advice", r.value("advice", json())},
        {"evidence", r.value("evidence", json::object())}}},
      {"measurement", measurement_of(run)},
      {"comparison", comparison_rows(run, store_runs)},
  };
}

}  // namespace

json build_page_data(const RunRecord& run, const Trace& trace,
                     const std::vector<RunRecord>& store_runs, const PageOptions& options) {
  require_report(run);
  const json& m = measurement_of(run);
  const int gpu = m.is_object() && m.contains("gpu") && m["gpu"].is_number_integer()
                      ? m["gpu"].get<int>()
                      : (trace.samples.empty() ? 0 : trace.samples.front().gpu);
  const std::vector<Sample> samples = samples_of_gpu(trace, gpu);
  if (samples.empty())
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("run {}: the trace {} has no samples of GPU {}", run.id, run.trace_path, gpu));

  std::vector<double> limits_W;
  for (const Sample& s : samples)
    if (s.limit_W) limits_W.push_back(*s.limit_W);
  json timeline = timeline_data(samples, trace, m, options.columns, false);
  timeline["phases"] = phase_bands(run.report, timeline["t0_s"].get<double>());
  timeline["phase_cycle_s"] = run.report.value("phase_cycle_s", json());
  json page = page_without_timeline(run, store_runs, options);
  page["timeline"] = timeline;
  page["restore"] = limit_restore_section(std::nullopt, limits_W, gpu_label(run));
  return page;
}

json build_untraced_page_data(const RunRecord& run, const std::string& why_no_timeline,
                              const std::vector<RunRecord>& store_runs,
                              const PageOptions& options) {
  require_report(run);
  json page = page_without_timeline(run, store_runs, options);
  page["timeline"] = nullptr;
  page["no_timeline"] = why_no_timeline;
  page["restore"] = nullptr;
  return page;
}

}  // namespace regime::report
