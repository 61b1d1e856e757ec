#include "session/sweep/sweep_view.hpp"

#include <fmt/core.h>

#include "analysis/sweep_rows.hpp"
#include "present/render.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

std::string SweepReport::gpu_label() const {
  return job_devices.size() > 1 ? fmt::format("{}x {}", job_devices.size(), info.name) : info.name;
}

plan::DecisionView decision_view(const SweepReport& r) {
  return plan::decision_view(r.outcome.decision, r.outcome.probes, r.objective,
                             r.info.default_limit_W, r.unit);
}

std::string results_text(const SweepReport& r) {
  return plan::results_table(r.outcome.probes, decision_view(r), r.outcome.default_again);
}

std::string decision_text(const SweepReport& r) {
  return plan::decision_text(r.outcome.decision, decision_view(r));
}

// How every cap's window was cut, for a job of phases; "" for a steady job.
std::string windows_text(const SweepReport& r) {
  return r.cycle_s ? fmt::format("whole cycles of {:.1f} s", *r.cycle_s) : std::string();
}

std::string per_gpu_text(const SweepReport& r) {
  std::string out;
  if (!r.per_gpu.is_array()) return out;
  for (auto it = r.per_gpu.rbegin(); it != r.per_gpu.rend(); ++it) {
    out += fmt::format("  {:6.1f} W:", (*it)["cap_W"].get<double>());
    for (const auto& g : (*it)["gpus"])
      out += fmt::format("  {} {:.2f} J {:.1f} W", g["device"].get<std::string>(),
                         g["energy_per_step_J"].get<double>(), g["avg_power_W"].get<double>());
    out += fmt::format("  (spread: energy {:.1f}%, power {:.1f} W)\n",
                       (*it)["energy_spread_pct"].get<double>(),
                       (*it)["power_spread_W"].get<double>());
  }
  return out;
}

nlohmann::json to_json(const SweepReport& r) {
  const plan::SearchOutcome& o = r.outcome;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& p : plan::by_cap_desc(o.probes)) results.push_back(plan::result_json(p));
  nlohmann::json j = {
      {"device", r.device},
      {"workload", r.workload},
      {"strategy", plan::to_string(r.strategy)},
      {"objective", r.objective.text()},
      {"probes", o.probes.size()},
      {"results", results},
      {"decision", plan::decision_json(o.decision, decision_view(r))},
      {"regime", o.regime ? nlohmann::json(to_string(*o.regime)) : nlohmann::json(nullptr)},
      {"stop_reason", o.stop_reason},
      {"per", r.unit == "second" ? "second" : "step"}};
  if (r.cycle_s) {
    j["windows"] = windows_text(r);
    j["cycle_s"] = *r.cycle_s;
    j["decision"]["windows"] = windows_text(r);
  }
  if (o.default_again) j["default_again"] = plan::result_json(*o.default_again);
  if (!r.prior.empty())
    j["prior"] = {{"predictor", r.prior},
                  {"draw_W", r.prior_draw_W ? nlohmann::json(*r.prior_draw_W) : nlohmann::json()}};
  if (!r.curve.model.empty()) j["curve"] = plan::to_json(r.curve);
  if (r.stored_id) j["stored_as"] = "sweep:" + std::to_string(*r.stored_id);
  if (r.store_failure) j["store_failed"] = to_json(*r.store_failure);
  if (!r.job_devices.empty()) {
    j["job_devices"] = r.job_devices;
    j["per_gpu"] = r.per_gpu;
  }
  return j;
}

std::string sweep_table_csv(const SweepReport& r) {
  std::vector<SweepRow> rows;
  for (const auto& p : plan::by_cap_desc(r.outcome.probes))
    rows.push_back(to_sweep_row(r.workload, r.gpu_label(), p.cap_W, p.measurement, r.unit));
  if (const auto& a = r.outcome.default_again) {
    rows.push_back(to_sweep_row(r.workload, r.gpu_label(), a->cap_W, a->measurement, r.unit));
    rows.back().again = true;
  }
  return format_sweep_table(rows);
}

std::string to_text(const SweepReport& r) {
  std::string out;
  const plan::SearchOutcome& o = r.outcome;
  out += fmt::format("sweep of {} on {}: strategy {}, objective {}, {} probe(s)\n", r.workload,
                     r.device, plan::to_string(r.strategy), r.objective.text(), o.probes.size());
  if (o.regime) out += fmt::format("regime at the default limit: {}\n", to_string(*o.regime));
  if (!r.prior.empty())
    out += fmt::format("prior {}: predicted draw {}\n", r.prior,
                       r.prior_draw_W ? fmt::format("{:.1f} W", *r.prior_draw_W)
                                      : std::string("none (the search went its own way)"));
  if (!r.curve.model.empty()) out += "curve: " + plan::to_text(r.curve) + "\n";
  out += results_text(r);
  if (!r.job_devices.empty())
    out += fmt::format(
        "one job on {} GPUs ({}): energy per step summed over them, power W per GPU (mean); "
        "each GPU at each cap:\n{}",
        r.job_devices.size(), r.gpu_label(), per_gpu_text(r));
  out += "search: " + o.stop_reason + "\n";
  out += decision_text(r);
  if (r.cycle_s)
    out += fmt::format(
        "  windows: {} (a job of phases: every cap measured over the same mix of them, settled "
        "cycle against cycle)\n",
        windows_text(r));
  if (!r.after.empty()) out += r.after + "\n";
  if (r.stored_id)
    out += fmt::format(
        "kept as sweep:{} in {} (`regime recommend --run sweep:{} --objective O` decides it "
        "again)\n",
        *r.stored_id, r.kept_in, *r.stored_id);
  if (r.store_failure) out += store_failure_text(*r.store_failure) + "\n";
  return out;
}

}  // namespace regime::session
