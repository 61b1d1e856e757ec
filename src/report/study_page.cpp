#include "report/study_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime::report {

namespace {

using nlohmann::json;

json member_or_null(const json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : json();
}

// GPU `gpu`'s figures at each cap the sweep measured, ascending by cap.
json gpu_sweep_points(const json& per_gpu_sweep, size_t gpu) {
  std::vector<json> points;
  if (per_gpu_sweep.is_array())
    for (const json& at : per_gpu_sweep) {
      const json gpus = member_or_null(at, "gpus");
      if (!member_or_null(at, "cap_W").is_number() || !gpus.is_array() || gpu >= gpus.size())
        continue;
      const json& g = gpus[gpu];
      points.push_back({{"cap_W", at["cap_W"]},
                        {"energy_per_step_J", member_or_null(g, "energy_per_step_J")},
                        {"avg_power_W", member_or_null(g, "avg_power_W")},
                        {"time_per_step_s", member_or_null(g, "time_per_step_s")}});
    }
  std::sort(points.begin(), points.end(), [](const json& a, const json& b) {
    return a["cap_W"].get<double>() < b["cap_W"].get<double>();
  });
  return points;
}

json point_at(const json& points, double cap_W) {
  for (const json& p : points)
    if (std::abs(p["cap_W"].get<double>() - cap_W) < 0.05) return p;
  return nullptr;
}

// What the job's one cap did to this GPU: its figures at the default and at the cap decided.
json gpu_decision(const json& points, const json& sweep) {
  const json d = member_or_null(sweep, "decision");
  const json default_W = member_or_null(sweep, "default_limit_W");
  if (!d.is_object() || !default_W.is_number()) return nullptr;
  const bool keep = d.value("keep_default", false) || !member_or_null(d, "cap_W").is_number();
  const double cap_W = keep ? default_W.get<double>() : d["cap_W"].get<double>();
  const json at_default = point_at(points, default_W.get<double>());
  const json at_cap = point_at(points, cap_W);
  json change = nullptr;
  if (at_default.is_object() && at_cap.is_object() && at_default["energy_per_step_J"].is_number() &&
      at_cap["energy_per_step_J"].is_number() && at_default["energy_per_step_J"] > 0)
    change = 100 * (at_cap["energy_per_step_J"].get<double>() /
                        at_default["energy_per_step_J"].get<double>() -
                    1);
  return {{"cap_W", cap_W},           {"keep_default", keep}, {"default_limit_W", default_W},
          {"at_default", at_default}, {"at_cap", at_cap},     {"energy_change_pct", change}};
}

json gpu_timeline(const StudyGpu& g, size_t columns) {
  const std::vector<Sample> samples = g.trace->samples.empty()
                                          ? std::vector<Sample>{}
                                          : samples_of_gpu(*g.trace, g.trace->samples.front().gpu);
  if (samples.empty())
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: the probe trace {} holds no sample", g.device, g.trace_path));
  json timeline =
      timeline_data(samples, *g.trace, member_or_null(g.regime, "measurement"), columns, false);
  timeline["phases"] = phase_bands(g.regime, timeline["t0_s"].get<double>());
  timeline["phase_cycle_s"] = member_or_null(g.regime, "phase_cycle_s");
  return timeline;
}

// The limit every sample of every GPU recorded.
std::vector<double> limits_seen(const std::vector<StudyGpu>& gpus) {
  std::vector<double> limits_W;
  for (const StudyGpu& g : gpus)
    if (g.trace)
      for (const Sample& sample : g.trace->samples)
        if (sample.limit_W) limits_W.push_back(*sample.limit_W);
  return limits_W;
}

}  // namespace

json study_gpus_data(const std::vector<StudyGpu>& gpus, size_t regime_gpu,
                     const json& per_gpu_sweep, const json& sweep, size_t columns) {
  json out = json::array();
  for (size_t i = 0; i < gpus.size(); ++i) {
    const StudyGpu& g = gpus[i];
    const json points = gpu_sweep_points(per_gpu_sweep, i);
    json entry = {{"index", i},
                  {"device", g.device},
                  {"gpu_name", g.gpu_name},
                  {"gpu_uuid", g.gpu_uuid},
                  {"named_job", i == regime_gpu},
                  {"regime",
                   {{"name", member_or_null(g.regime, "regime")},
                    {"confidence", member_or_null(g.regime, "confidence")},
                    {"advice", member_or_null(g.regime, "advice")},
                    {"evidence", g.regime.value("evidence", json::object())}}},
                  {"measurement", member_or_null(g.regime, "measurement")},
                  {"trace_path", g.trace_path},
                  {"timeline", g.trace ? gpu_timeline(g, columns) : json()},
                  {"sweep", points},
                  {"decision", gpu_decision(points, sweep)}};
    out.push_back(std::move(entry));
  }
  return out;
}

json study_page_data(const StudyPage& s, const std::vector<RunRecord>& store_runs,
                     const PageOptions& options) {
  const bool job = s.gpus.size() > 1;
  // A job's timelines are each GPU's, in their own sections: none is drawn above them.
  const std::string no_timeline =
      job && s.no_trace.empty()
          ? fmt::format("A job on {} GPUs: each GPU's trace is drawn in its own section below.",
                        s.gpus.size())
          : s.no_trace;
  // A job's probe stands, in the cards and beside the store's runs, for the job its sweep
  // measures: its figures summed over its GPUs.
  RunRecord probe = s.probe;
  const bool job_measured = job && s.job_measurement.is_object() && probe.report.is_object();
  if (job_measured) probe.report["measurement"] = s.job_measurement;
  json page = s.trace && !job ? build_page_data(probe, *s.trace, store_runs, options)
                              : build_untraced_page_data(probe, no_timeline, store_runs, options);
  page["title"] = s.title;
  page["kind"] = "study";
  if (!s.sweep.is_null())
    page["sweep"] = s.sweep;
  else
    page["sweep_skipped"] = s.sweep_skipped;
  if (!s.whole_run.is_null()) page["whole_run"] = s.whole_run;
  if (job_measured) page["measurement_of"] = fmt::format("the job's {} GPUs summed", s.gpus.size());
  if (job)
    page["gpus"] = study_gpus_data(s.gpus, s.regime_gpu, s.per_gpu_sweep, s.sweep, options.columns);
  const std::string gpu =
      s.probe.gpu_name + (s.probe.gpu_uuid.empty() ? std::string() : " (" + s.probe.gpu_uuid + ")");
  if (s.restored)
    page["restore"] = limit_restore_section(s.restored, {}, gpu);
  else if (!s.after.empty())  // as the study said it, where the limit put back is not known
    page["restore"] = {{"changed", true},
                       {"restored", s.after.rfind("restored", 0) == 0},
                       {"stated", true},
                       {"gpu", gpu},
                       {"text", "After the sweep: " + s.after + "."}};
  else if (job)  // no sweep: every GPU's trace says whether its limit moved
    page["restore"] = limit_restore_section(std::nullopt, limits_seen(s.gpus), gpu);
  return page;
}

}  // namespace regime::report
