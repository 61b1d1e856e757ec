#include "session/sweep.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <fstream>
#include <map>

#include "act/guard_set.hpp"
#include "act/journal.hpp"
#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "analysis/sweep_rows.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/utc_time.hpp"
#include "plan/cap_grid.hpp"
#include "plan/recommend.hpp"
#include "plan/render.hpp"
#include "plan/replay.hpp"
#include "plan/twin_curve.hpp"
#include "store/run_store.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

namespace {

// The node agent restores a cap when the connection that set it closes, so a cap left "set" by an
// unprivileged sweep would be gone when regime ends: refused before any work, saying what works.
void refuse_apply_through_agent(const SweepSettings& s, const std::vector<Gpu*>& gpus) {
  if (!s.apply) return;
  for (Gpu* g : gpus)
    if (g->changes_through_agent())
      throw Error(ErrorKind::ActuationRefused,
                  fmt::format("--apply cannot leave a cap on {}: its limit changes through the "
                              "node agent, which restores it when this command ends. Run the "
                              "sweep as root to keep the cap, or let jobs take the kept decision "
                              "(`--gpu-power=auto` under Slurm)",
                              g->info().device));
}

// --prior: the predicted draw at the default limit places the second probe.
void apply_prior(SweepReport& rep, plan::SearchOptions& opt, const SweepSettings& s,
                 const std::string& gpu, const std::string& workload) {
  if (s.prior.empty()) return;
  rep.prior = s.prior;
  rep.prior_draw_W = predicted_draw_W(s.prior, gpu, workload, s.llm, s.db);
  opt.start_cap_W = rep.prior_draw_W;
}

SweepReport sweep_replay(const SweepRequest& r) {
  if (r.workload.builtin.empty())
    throw Error(ErrorKind::InvalidArgument,
                "a replay device needs --workload NAME to pick the rows of the sweep table");
  if (!r.workload.command.empty())
    throw Error(ErrorKind::InvalidArgument, "a replay device runs no command: drop '-- CMD'");
  const SweepTable table = read_sweep_table(r.device.devices.front().target);
  plan::ReplayProber prober(table, r.workload.builtin);
  SweepReport rep;
  rep.device = r.device.text;
  rep.workload = r.workload.builtin;
  rep.unit = prober.rows().front().unit;
  rep.info = prober.info(r.device.text);
  // The table's caps are the device's settings: "auto" means all of them.
  std::vector<double> caps;
  if (r.caps.automatic()) {
    for (const auto& row : prober.rows()) caps.push_back(row.cap_W);
  } else {
    caps = caps_on(r.caps, rep.info);
  }
  plan::SearchOptions opt = search_options(rep.info, r.settings, caps, false);
  plan::configure_curve(opt, prober.rows().front().gpu);
  apply_prior(rep, opt, r.settings, prober.rows().front().gpu, rep.workload);
  // Single measurements are judged with the noise of the whole table, as `regime recommend` does.
  opt.decision.priors = plan::table_priors(table, prober.rows().front().gpu);
  rep.strategy = opt.strategy;
  rep.objective = opt.decision.objective;
  rep.outcome = plan::search(prober, opt);
  return rep;
}

}  // namespace

plan::SearchOptions search_options(const GpuInfo& info, const SweepSettings& s,
                                   std::vector<double> caps, bool classify_default) {
  plan::SearchOptions opt;
  opt.strategy = s.strategy;
  opt.decision.objective = s.objective;
  opt.decision.default_limit_W = info.default_limit_W;
  opt.decision.max_power_W = info.max_limit_W;
  opt.force = s.force;
  opt.caps = plan::with_default(std::move(caps), info.default_limit_W);
  plan::configure_curve(opt, info.name);
  if (classify_default)
    opt.classify = [info](const Measurement& m) -> std::optional<Regime> {
      return classify(m, info).regime;
    };
  opt.on_probe = s.on_probe;
  return opt;
}

std::string SweepReport::gpu_label() const {
  return job_devices.size() > 1 ? fmt::format("{}x {}", job_devices.size(), info.name) : info.name;
}

namespace {

// The GPUs of one sweep: one, or every GPU of one job, which takes one cap for all: real GPUs of
// one model and range, swept live.
std::vector<Gpu*> sweep_gpus(std::vector<Target>& targets, const SweepSettings& s) {
  if (targets.size() == 1) return {&targets.front().gpu()};
  std::vector<Gpu*> gpus = job_gpus(targets);
  if (s.mode != SweepMode::Live)
    throw Error(ErrorKind::InvalidArgument,
                "a job on several GPUs is swept live only (--mode live): a restart per cap would "
                "start every rank again");
  const GpuInfo first = gpus.front()->info();
  for (Gpu* gpu : gpus) {
    const GpuInfo g = gpu->info();
    if (g.name != first.name || g.default_limit_W != first.default_limit_W ||
        g.min_limit_W != first.min_limit_W || g.max_limit_W != first.max_limit_W)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("one cap for a job needs GPUs of one model and range: {} is {} "
                              "({:g}-{:g} W), {} is {} ({:g}-{:g} W); sweep each GPU alone",
                              first.device, first.name, first.min_limit_W, first.max_limit_W,
                              g.device, g.name, g.min_limit_W, g.max_limit_W));
  }
  return gpus;
}

// Refused before any work starts: a sweep changes the limits at its first probe.
void check_can_sweep(const std::vector<Gpu*>& gpus, const std::vector<GpuInfo>& infos,
                     const SweepSettings& s, const ActuationPolicy& policy) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    check_actuation(policy, infos[i], gpus[i]->is_physical(), infos[i].default_limit_W);
    if (s.apply && gpus[i]->is_physical() && !policy.actuate)
      throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");
  }
  refuse_apply_through_agent(s, gpus);
}

// One GPU's guard speaks for itself; a job's guards speak for the job (act/guard_set.hpp).
double set_every(PowerLimitGuardSet& guards, double cap_W) {
  return guards.size() == 1 ? guards.at(0).set(cap_W) : guards.set_all(cap_W).front();
}
void restore_every(PowerLimitGuardSet& guards) {
  if (guards.size() == 1)
    guards.at(0).restore();
  else
    guards.restore();
}

// Leaves the chosen cap set (--apply) or restores the originals; says which.
std::string apply_or_restore(PowerLimitGuardSet& guards, const plan::Decision& d, bool apply,
                             const GpuInfo& info) {
  const size_t n = guards.size();
  const double original_W = guards.original_limit_W().value_or(info.enforced_limit_W);
  if (apply && !d.keep_default) {
    const double enforced_W = set_every(guards, d.cap_W);
    guards.keep();
    if (n > 1)
      return fmt::format(
          "applied: {:g} W left set on {} GPUs; the originals ({:g} W) are in the journal under "
          "{}: `regime restore` brings them back",
          d.cap_W, n, original_W, journal_path().string());
    return fmt::format(
        "applied: {:g} W left set (enforced {:g} W); the original {:g} W is in the journal "
        "under {}: `regime restore` brings it back",
        d.cap_W, enforced_W, original_W, journal_path().string());
  }
  restore_every(guards);
  std::string after = fmt::format("restored the original limit {:g} W", original_W);
  if (n > 1) after += fmt::format(" on {} GPUs", n);
  if (apply)
    after += " (--apply: the decision keeps the default, nothing to apply)";
  else if (!d.keep_default)
    after += " (--apply would leave the chosen cap set)";
  return after;
}

// The default's regime: each GPU classified on its own figures there (the first probe, at the
// highest cap), the most constrained one the job's (analysis/data_parallel.hpp).
std::function<std::optional<Regime>(const Measurement&)> classify_default(
    const std::vector<GpuInfo>& infos, const LiveProber* prober) {
  return [infos, prober](const Measurement& m) -> std::optional<Regime> {
    std::vector<Measurement> at_default{m};
    if (prober && !prober->per_gpu().empty()) at_default = prober->per_gpu().rbegin()->second;
    std::vector<Regime> regimes;
    for (size_t i = 0; i < at_default.size(); ++i)
      regimes.push_back(classify(at_default[i], infos.at(i)).regime);
    return job_regime(regimes);
  };
}

// Accepted per-second windows (--per-second): every figure is per second.
void set_unit(SweepReport& rep) {
  for (const auto& p : rep.outcome.probes)
    if (p.measurement.per_second) rep.unit = "second";
}

// Each GPU's figures at each cap, for a job's report.
nlohmann::json per_gpu_json(const std::map<double, std::vector<Measurement>>& by_cap,
                            const std::vector<std::string>& devices) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [cap, ms] : by_cap) {
    GpuSpread sp = gpu_spread(ms);
    nlohmann::json g = nlohmann::json::array();
    for (size_t i = 0; i < ms.size(); ++i)
      g.push_back({{"device", devices.at(i)},
                   {"energy_per_step_J", ms[i].energy_per_step_J},
                   {"avg_power_W", ms[i].avg_power_W},
                   {"time_per_step_s", ms[i].time_per_step_s}});
    out.push_back({{"cap_W", cap},
                   {"gpus", g},
                   {"energy_spread_pct", 100 * sp.energy_rel},
                   {"power_spread_W", sp.power_W}});
  }
  return out;
}

}  // namespace

SweepReport new_sweep_report(const std::vector<std::string>& devices,
                             const std::vector<GpuInfo>& infos, const std::string& workload) {
  SweepReport rep;
  if (devices.size() > 1) rep.job_devices = devices;
  rep.device = fmt::format("{}", fmt::join(devices, ","));
  rep.workload = workload;
  rep.info = infos.at(0);
  return rep;
}

plan::SearchOptions sweep_search_options(SweepReport& rep, size_t gpus,
                                         const std::vector<double>& caps, const SweepSettings& s) {
  plan::SearchOptions opt = search_options(rep.info, s, caps, false);
  // P_max of the job (zeus): every GPU may draw its highest limit.
  opt.decision.max_power_W = rep.info.max_limit_W * static_cast<double>(gpus);
  apply_prior(rep, opt, s, rep.info.name, rep.workload);
  // Heat drifts under a sweep: the default is measured again at the end (plan/decision.hpp).
  opt.remeasure_default = true;
  if (s.on_plan) s.on_plan(caps.size() + 1);
  rep.strategy = opt.strategy;
  rep.objective = opt.decision.objective;
  return opt;
}

void search_live(SweepReport& rep, const std::vector<GpuInfo>& infos, plan::SearchOptions opt,
                 RunLoop& loop, Workload& work, std::function<void(double)> set_all,
                 const ProbeBudget& budget) {
  LiveProber prober(loop, work, std::move(set_all), budget);
  opt.classify = classify_default(infos, &prober);
  rep.outcome = plan::search(prober, opt);
  if (!rep.job_devices.empty()) rep.per_gpu = per_gpu_json(prober.per_gpu(), rep.job_devices);
  set_unit(rep);
}

SweepReport sweep_targets(std::vector<Target>& targets, const WorkloadSpec& workload,
                          const std::vector<double>& caps, const SweepSettings& s,
                          const ActuationPolicy& policy) {
  std::vector<Gpu*> gpus = sweep_gpus(targets, s);
  std::vector<GpuInfo> infos;
  std::vector<std::string> devices;
  for (size_t i = 0; i < gpus.size(); ++i) {
    infos.push_back(gpus[i]->info());
    devices.push_back(targets[i].uri());
  }
  SweepReport rep = new_sweep_report(devices, infos, workload.display_name());
  check_can_sweep(gpus, infos, s, policy);
  plan::SearchOptions opt = sweep_search_options(rep, gpus.size(), caps, s);

  Target& first = targets.front();
  PowerLimitGuardSet guards(gpus, policy);
  try {
    if (s.mode == SweepMode::Restart) {
      RestartProber prober(
          first.gpu(), first.clock(), [&] { return first.make_workload(workload); }, guards.at(0),
          s.budget);
      opt.classify = classify_default(infos, nullptr);
      rep.outcome = plan::search(prober, opt);
      set_unit(rep);
    } else {
      WorkloadPtr w = first.make_workload(workload);
      RunOptions ro;
      ro.duration_s = 0;  // until the search ends or the workload does
      RunLoop loop(gpus, *w, ro, first.clock());
      loop.start();
      search_live(
          rep, infos, opt, loop, *w, [&guards](double cap_W) { set_every(guards, cap_W); },
          s.budget);
      loop.finish_all();
    }
  } catch (const WorkloadFailed& e) {
    restore_every(guards);
    throw WorkloadFailed(std::string(e.what()) +
                             (gpus.size() == 1 ? "; the original power limit was restored"
                                               : "; every GPU's original power limit was restored"),
                         e.exit_status);
  }
  rep.after = apply_or_restore(guards, rep.outcome.decision, s.apply, rep.info);
  return rep;
}

namespace {
SweepReport sweep_devices(const SweepRequest& r) {
  if (r.device.replay()) return sweep_replay(r);
  validate(r.workload, "regime sweep --device nvml:0 --actuate -- python3 train.py");
  std::vector<Target> targets;
  if (runs_as_job(r.device))
    targets = open_targets(resolve_job_devices(r.device, r.workload));
  else
    targets.push_back(open_target(r.device.devices.front()));
  const GpuInfo info = targets.front().gpu().info();
  SweepReport rep = sweep_targets(targets, r.workload, caps_on(r.caps, info), r.settings,
                                  ActuationPolicy::from_flags(r.actuate));
  keep_sweep(rep, "sweep", to_json(rep), r.settings.db, settings_json(r.settings, r.caps.text));
  return rep;
}
}  // namespace

SweepReport run_sweep(const SweepRequest& r) {
  if (!r.table_out.empty() && r.device.replay())
    throw Error(ErrorKind::InvalidArgument,
                "--table-out: a replay device reads a sweep table already; there is none to write");
  SweepReport rep = sweep_devices(r);
  if (!r.table_out.empty()) {
    std::ofstream out(r.table_out, std::ios::trunc);
    out << sweep_table_csv(rep);
    if (!out.flush())
      throw Error(ErrorKind::Io, "--table-out " + r.table_out + ": cannot write the sweep table");
  }
  return rep;
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
  if (o.default_again) j["default_again"] = plan::result_json(*o.default_again);
  if (!r.prior.empty())
    j["prior"] = {{"predictor", r.prior},
                  {"draw_W", r.prior_draw_W ? nlohmann::json(*r.prior_draw_W) : nlohmann::json()}};
  if (r.stored_id) j["stored_as"] = "sweep:" + std::to_string(*r.stored_id);
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

nlohmann::json settings_json(const SweepSettings& s, const std::string& caps) {
  return {{"caps", caps},
          {"strategy", plan::to_string(s.strategy)},
          {"objective", s.objective.text()},
          {"mode", to_string(s.mode)},
          {"apply", s.apply},
          {"force", s.force},
          {"settle_s", s.budget.settle_s},
          {"max_settle_s", s.budget.max_settle_s},
          {"warmup_steps", s.budget.warmup_steps},
          {"target_rel_ci", s.budget.target_rel_ci},
          {"min_steps", s.budget.min_steps},
          {"max_steps", s.budget.max_steps},
          {"max_probe_s", s.budget.max_probe_s},
          {"per_second", s.budget.accept_per_second}};
}

int64_t keep_sweep(SweepReport& r, const std::string& kind, const nlohmann::json& json,
                   const std::string& db, const nlohmann::json& options) {
  RunStore store(RunStore::path_or_default(db));
  return keep_sweep(r, kind, json, store, options);
}

int64_t keep_sweep(SweepReport& r, const std::string& kind, const nlohmann::json& json,
                   RunStore& store, const nlohmann::json& options) {
  SweepRecord rec;
  rec.provenance.driver_version = r.info.driver_version;
  rec.provenance.options = options;
  rec.started_at_utc = utc_now_iso();
  rec.kind = kind;
  rec.device = r.device;
  rec.gpu_name = r.gpu_label();
  rec.gpu_uuid = r.info.uuid;
  rec.workload = r.workload;
  rec.strategy = plan::to_string(r.strategy);
  rec.objective = r.objective.text();
  rec.default_limit_W = r.info.default_limit_W;
  rec.max_limit_W = r.info.max_limit_W;
  rec.table_csv = sweep_table_csv(r);
  rec.decision = plan::decision_json(r.outcome.decision, decision_view(r));
  rec.report = json;
  r.stored_id = store.insert_sweep(rec);
  DecisionRecord d;
  d.made_at_utc = rec.started_at_utc;
  d.source = kind;
  d.sweep_id = r.stored_id;
  d.device = rec.device;
  d.gpu_name = rec.gpu_name;
  d.workload = rec.workload;
  d.objective = rec.objective;
  if (!r.outcome.decision.keep_default) d.cap_W = r.outcome.decision.cap_W;
  d.decision = rec.decision;
  d.provenance = rec.provenance;
  store.insert_decision(d);
  r.db = store.location();
  return *r.stored_id;
}

}  // namespace regime::session
