#include "session/probe/probe_view.hpp"

#include <fmt/core.h>

#include <iterator>

#include "analysis/measure.hpp"
#include "session/probe/probe_types.hpp"

namespace regime::session {

nlohmann::json to_json(const ProbeReport& p) {
  nlohmann::json out = p.report ? regime::to_json(*p.report) : nlohmann::json::object();
  for (auto& [k, v] : p.run.items()) out[k] = v;
  return out;
}

nlohmann::json to_json(const JobProbeReport& p) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : p.gpus) {
    nlohmann::json j = to_json(g);
    if (!g.failure.empty()) j["failure"] = g.failure;
    gpus.push_back(j);
  }
  nlohmann::json job = nullptr;
  if (p.job) {
    job = {{"gpus", p.gpus.size()},
           {"regime", to_string(*p.job_regime)},
           {"measurement", regime::to_json(*p.job)},
           {"spread", regime::to_json(*p.spread)}};
  }
  return {{"job", job}, {"gpus", gpus}, {"usage", p.usage}, {"warnings", p.warnings}};
}

std::string to_text(const ProbeReport& p) {
  if (!p.report) return "";
  const RunRecord& rec = p.record;
  const nlohmann::json& run = p.run;
  std::string out = format_report(*p.report);
  auto to = std::back_inserter(out);
  std::string status;
  if (p.is_command && rec.exit_status)
    status =
        fmt::format(", exit status {}{}", *rec.exit_status,
                    run["stopped_at_time_limit"].get<bool>() ? " (stopped at the time limit)" : "");
  fmt::format_to(to, "run {}: {} on {} ({}), {:.1f} s{}, {} samples, {} step markers{}\n", rec.id,
                 rec.workload, rec.device, rec.gpu_name, run["duration_s"].get<double>(),
                 p.simulated ? " simulated" : "", run["samples"].get<size_t>(),
                 run["step_markers"].get<size_t>(), status);
  if (!p.simulated)
    fmt::format_to(to, "  regime's own CPU: {:.2f}% of one core\n",
                   run["sampler_cpu_pct"].get<double>());
  if (run["read_retries"].get<long>() > 0 || run["failed_reads"].get<long>() > 0)
    fmt::format_to(
        to, "  device reads: {} retried after a transient error, {} given up (field left empty)\n",
        run["read_retries"].get<long>(), run["failed_reads"].get<long>());
  fmt::format_to(to, "  trace {}\n  steps {}\n  saved as run {} in {}\n", rec.trace_path,
                 rec.steps_path, rec.id, run["db"].get<std::string>());
  return out;
}

std::string to_text(const JobProbeReport& p) {
  std::string out;
  auto to = std::back_inserter(out);
  for (const auto& g : p.gpus) {
    const RunRecord& rec = g.record;
    if (!g.report) {
      fmt::format_to(to, "{} ({}): {}\n", rec.device, rec.gpu_name, g.failure);
      continue;
    }
    const Measurement& m = g.report->measurement;
    fmt::format_to(to,
                   "{} ({}): {} (confidence {:.2f}), {:.1f} W mean, {:.2f} J/{}, run {}\n  trace "
                   "{}\n",
                   rec.device, rec.gpu_name, to_string(g.report->regime), g.report->confidence,
                   m.avg_power_W, m.energy_per_step_J, m.per_second ? "s" : "step", rec.id,
                   rec.trace_path);
  }
  if (p.job) {
    const Measurement& j = *p.job;
    fmt::format_to(to,
                   "job on {} GPUs: {}; time per {} {:.4f} s [{:.4f}, {:.4f}], energy per {} "
                   "{:.2f} J [{:.2f}, {:.2f}] (summed over GPUs), {} steps\n",
                   p.gpus.size(), to_string(*p.job_regime), j.per_second ? "second" : "step",
                   j.time_per_step_s, j.time_per_step_ci_s.first, j.time_per_step_ci_s.second,
                   j.per_second ? "second" : "step", j.energy_per_step_J,
                   j.energy_per_step_ci_J.first, j.energy_per_step_ci_J.second, j.steps);
    fmt::format_to(
        to, "  spread between GPUs: energy per step {:.1f}%, mean power {:.1f} W (highest: {})\n",
        100 * p.spread->energy_rel, p.spread->power_W,
        p.gpus[static_cast<size_t>(p.spread->highest_gpu)].record.device);
  }
  if (p.usage.is_object())
    fmt::format_to(to, "  the job's GPUs (CUDA_VISIBLE_DEVICES {}): {}{}\n",
                   p.usage["cuda_visible_devices"].is_null()
                       ? std::string("unset")
                       : p.usage["cuda_visible_devices"].get<std::string>(),
                   p.usage["job_gpus"].dump(), p.usage["match"].get<bool>() ? ", as measured" : "");
  return out;
}

}  // namespace regime::session
