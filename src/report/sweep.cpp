#include "report/sweep.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "plan/recommend.hpp"
#include "trace/sweep_table.hpp"

namespace regime::report {

nlohmann::json sweep_section(const std::vector<plan::ProbeResult>& probes,
                             const plan::Decision& decision, const plan::DecisionView& view) {
  return sweep_section(probes, plan::decision_json(decision, view), view.unit,
                       view.default_limit_W);
}

nlohmann::json sweep_section(const std::vector<plan::ProbeResult>& probes,
                             const nlohmann::json& decision, const std::string& unit,
                             double default_limit_W) {
  // Keyed by the cap to 0.1 W, as the decision rule matches caps (find_probe).
  std::map<long long, const plan::ProbeResult*> by_cap;
  for (const plan::ProbeResult& p : probes) by_cap[std::llround(p.cap_W * 10)] = &p;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [key, p] : by_cap) {
    const Measurement& m = p->measurement;
    points.push_back(
        {{"cap_W", p->cap_W},
         {"energy_per_step_J", m.energy_per_step_J},
         {"energy_per_step_ci_J", {m.energy_per_step_ci_J.first, m.energy_per_step_ci_J.second}},
         {"time_per_step_s", m.time_per_step_s},
         {"time_per_step_ci_s", {m.time_per_step_ci_s.first, m.time_per_step_ci_s.second}},
         {"steps", m.steps},
         {"avg_power_W", m.avg_power_W}});
  }
  return {{"unit", unit},
          {"default_limit_W", default_limit_W},
          {"probes", probes.size()},
          {"points", points},
          {"decision", decision}};
}

namespace {

// What a kept sweep measured, read back from its table.
struct KeptSweep {
  std::vector<plan::ProbeResult> probes;  // highest cap first
  double default_W = 0;
  std::string unit;  // "step" or "second"
};

KeptSweep read_kept(const SweepRecord& sweep) {
  const std::string name = fmt::format("sweep:{}", sweep.id);
  if (!sweep.unreadable.empty())
    throw Error(ErrorKind::Parse, fmt::format("{} cannot be drawn: {}", name, sweep.unreadable));
  if (!sweep.decision.is_object())
    throw Error(ErrorKind::Parse, fmt::format("{} kept no decision to draw", name));
  const SweepTable table = parse_sweep_table(sweep.table_csv, name);
  if (table.workloads().size() != 1)
    throw Error(ErrorKind::Parse, fmt::format("{} holds {} workloads; a kept sweep holds one", name,
                                              table.workloads().size()));
  KeptSweep out;
  out.probes = plan::probes_from_rows(table.rows);
  out.default_W = sweep.default_limit_W > 0 ? sweep.default_limit_W : default_limit_W(table.rows);
  out.unit = table.rows.front().unit == "second" ? "second" : "step";
  return out;
}

nlohmann::json section_of(const SweepRecord& sweep, const KeptSweep& kept) {
  nlohmann::json section = sweep_section(kept.probes, sweep.decision, kept.unit, kept.default_W);
  section["objective"] = sweep.objective;
  section["strategy"] = sweep.strategy;
  section["of"] = sweep.kind;
  return section;
}

// The probe at the default limit (the nearest cap to it): the figures a cap is judged against.
const plan::ProbeResult& default_probe(const std::vector<plan::ProbeResult>& probes,
                                       double default_W) {
  const plan::ProbeResult* best = &probes.front();
  for (const plan::ProbeResult& p : probes)
    if (std::abs(p.cap_W - default_W) < std::abs(best->cap_W - default_W)) best = &p;
  return *best;
}

}  // namespace

nlohmann::json kept_sweep_section(const SweepRecord& sweep) {
  return section_of(sweep, read_kept(sweep));
}

nlohmann::json sweep_page_data(const SweepRecord& sweep, const std::optional<std::string>& regime,
                               const std::vector<RunRecord>& store_runs,
                               const PageOptions& options) {
  const std::string name = fmt::format("sweep:{}", sweep.id);
  const KeptSweep kept = read_kept(sweep);
  const plan::ProbeResult& at_default = default_probe(kept.probes, kept.default_W);

  // The sweep as a run for the cards and the comparison: its default's figures. Id 0: it is not
  // one of the store's probes, whose ids it must not shadow.
  RunRecord run;
  run.device = sweep.device;
  run.gpu_name = sweep.gpu_name;
  run.gpu_uuid = sweep.gpu_uuid;
  run.workload = sweep.workload;
  run.status = "done";
  run.started_at_utc = sweep.started_at_utc;
  run.regime = regime;
  run.trace_path = "none (a sweep keeps its table, not its traces)";
  run.measurement = to_json(at_default.measurement);
  run.measurement["per"] = kept.unit;
  run.report = {{"regime", regime ? nlohmann::json(*regime) : nlohmann::json()},
                {"measurement", run.measurement}};
  nlohmann::json page = build_untraced_page_data(
      run,
      fmt::format("{} keeps what it measured at each cap as a sweep table, not the traces: "
                  "`regime probe` or `regime study --out DIR` keeps a trace to draw",
                  name),
      store_runs, options);
  page["title"] = fmt::format("Regime {}: {} on {}", name, sweep.workload,
                              sweep.gpu_name.empty() ? sweep.device : sweep.gpu_name);
  page["kind"] = "sweep";
  page["default_cap_W"] = at_default.cap_W;
  page["sweep"] = section_of(sweep, kept);
  return page;
}

}  // namespace regime::report
