// regime runs [list] [--gpu G] [--workload W] [--db FILE] [--limit N] [--json] |
// regime runs show ID|probe:ID|sweep:ID|study:ID|decision:ID|control:ID: what the run database
// holds (src/session/runs.hpp).
#include "session/runs.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>
#include <set>
#include <type_traits>
#include <variant>

#include "cli/command.hpp"

namespace regime::cli {

namespace {

nlohmann::json probe_json(const RunRecord& r) {
  return {{"run", fmt::format("probe:{}", r.id)},
          {"started_at_utc", r.started_at_utc},
          {"device", r.device},
          {"host", r.host},
          {"gpu", r.gpu_name},
          {"workload", r.workload},
          {"status", r.status},
          {"regime", r.regime ? nlohmann::json(*r.regime) : nlohmann::json(nullptr)},
          {"trace", r.trace_path}};
}

nlohmann::json sweep_json(const SweepRecord& s) {
  return {{"run", fmt::format("sweep:{}", s.id)},
          {"kind", s.kind},
          {"started_at_utc", s.started_at_utc},
          {"device", s.device},
          {"host", s.provenance.host},
          {"gpu", s.gpu_name},
          {"workload", s.workload},
          {"objective", s.objective},
          {"decision", s.decision}};
}

nlohmann::json study_json(const StudyRecord& s) {
  return {{"run", fmt::format("study:{}", s.id)},
          {"started_at_utc", s.started_at_utc},
          {"device", s.device},
          {"host", s.provenance.host},
          {"gpu", s.gpu_name},
          {"workload", s.workload},
          {"regime", s.regime ? nlohmann::json(*s.regime) : nlohmann::json(nullptr)},
          {"sweep", s.sweep_id ? nlohmann::json(fmt::format("sweep:{}", *s.sweep_id))
                               : nlohmann::json(nullptr)},
          {"decision", s.decision}};
}

nlohmann::json decision_json(const DecisionRecord& d) {
  return {{"run", fmt::format("decision:{}", d.id)},
          {"made_at_utc", d.made_at_utc},
          {"source", d.source},
          {"sweep", d.sweep_id ? nlohmann::json(fmt::format("sweep:{}", *d.sweep_id))
                               : nlohmann::json(nullptr)},
          {"device", d.device},
          {"host", d.provenance.host},
          {"gpu", d.gpu_name},
          {"workload", d.workload},
          {"objective", d.objective},
          {"cap_W", d.cap_W ? nlohmann::json(*d.cap_W) : nlohmann::json(nullptr)},
          {"decision", d.decision}};
}

nlohmann::json control_json(const ControlRunRecord& c) {
  const nlohmann::json& r = c.report;
  return {{"run", fmt::format("control:{}", c.id)},
          {"started_at_utc", c.started_at_utc},
          {"device", c.device},
          {"host", c.provenance.host},
          {"gpu", c.gpu_name},
          {"workload", c.workload},
          {"policy", c.policy},
          {"engaged", r.value("engaged", false)},
          {"verdict", r.contains("verdict") ? r["verdict"] : nlohmann::json(nullptr)}};
}

std::string cap_text(const nlohmann::json& decision) {
  if (!decision.is_object()) return "-";
  return decision.value("keep_default", true) ? "keep default"
                                              : fmt::format("{:g} W", decision.value("cap_W", 0.0));
}

std::string optional_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : "-";
}

template <class Record, class ToJson>
nlohmann::json rows_json(const std::vector<Record>& rows, ToJson to_json) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) out.push_back(to_json(r));
  return out;
}

void list(const std::string& db, size_t limit, const session::RunsFilter& filter, bool json) {
  session::RunsListing l = session::list_runs(db, limit, filter);
  if (json) {
    print_json({{"db", l.db},
                {"filter", {{"gpu", filter.gpu}, {"workload", filter.workload}}},
                {"probes", rows_json(l.probes, probe_json)},
                {"sweeps", rows_json(l.sweeps, sweep_json)},
                {"studies", rows_json(l.studies, study_json)},
                {"decisions", rows_json(l.decisions, decision_json)},
                {"control_runs", rows_json(l.control_runs, control_json)}});
    return;
  }
  std::cout << fmt::format(
      "{}: {} probe(s), {} sweep(s), {} study(ies), {} decision(s), {} controller run(s) shown, "
      "newest first{}\n",
      l.db, l.probes.size(), l.sweeps.size(), l.studies.size(), l.decisions.size(),
      l.control_runs.size(),
      filter.gpu.empty() && filter.workload.empty()
          ? ""
          : fmt::format(" (gpu '{}', workload '{}')", filter.gpu, filter.workload));
  // The machine each row was made on, as a column where rows come from several (a server store
  // of a cluster); a store of one machine's rows shows none.
  // (Rows kept before hosts were recorded name none and count for no machine.)
  std::set<std::string> hosts;
  auto add = [&hosts](const std::string& host) {
    if (!host.empty()) hosts.insert(host);
  };
  for (const auto& r : l.probes) add(r.host);
  for (const auto& s : l.sweeps) add(s.provenance.host);
  for (const auto& s : l.studies) add(s.provenance.host);
  for (const auto& d : l.decisions) add(d.provenance.host);
  for (const auto& c : l.control_runs) add(c.provenance.host);
  const bool by_host = hosts.size() > 1 || l.db.rfind("mariadb://", 0) == 0;
  auto row = [by_host](const std::string& ref, const std::string& when, const std::string& host,
                       const std::string& device, const std::string& a, const std::string& b,
                       const std::string& workload) {
    std::cout << fmt::format("  {:<12} {:<20}  {}{:<10} {:<14} {:<13} {}\n", ref, when,
                             by_host ? fmt::format("{:<12} ", host.empty() ? "-" : host) : "",
                             device, a, b, workload);
  };
  if (l.probes.size() + l.sweeps.size() + l.studies.size() + l.decisions.size() +
          l.control_runs.size() >
      0)
    row("RESULT", "WHEN (UTC)", "HOST", "DEVICE", "REGIME / KIND", "OUTCOME", "WORKLOAD");
  for (const auto& r : l.probes)
    row(fmt::format("probe:{}", r.id), r.started_at_utc, r.host, r.device, r.regime.value_or("-"),
        r.status, r.workload);
  for (const auto& s : l.sweeps)
    row(fmt::format("sweep:{}", s.id), s.started_at_utc, s.provenance.host, s.device, s.kind,
        cap_text(s.decision), s.workload);
  for (const auto& s : l.studies)
    row(fmt::format("study:{}", s.id), s.started_at_utc, s.provenance.host, s.device,
        s.regime.value_or("-"), cap_text(s.decision), s.workload);
  for (const auto& d : l.decisions)
    row(fmt::format("decision:{}", d.id), d.made_at_utc, d.provenance.host, d.device, d.source,
        cap_text(d.decision), fmt::format("{} ({})", d.workload, d.objective));
  for (const auto& c : l.control_runs) {
    nlohmann::json j = control_json(c);
    const std::string verdict = optional_text(j["verdict"]);
    row(fmt::format("control:{}", c.id), c.started_at_utc, c.provenance.host, c.device,
        j["engaged"].get<bool>() ? "engaged" : "stayed out",
        verdict == "-" ? c.policy.substr(0, c.policy.find(':')) : verdict, c.workload);
  }
}

void show_sweep(const SweepRecord& s, bool json) {
  if (json) {
    nlohmann::json j = sweep_json(s);
    j["table_csv"] = s.table_csv;
    j["report"] = s.report;
    return print_json(j);
  }
  std::cout << fmt::format("sweep:{} ({}) of {} on {} ({}), {}, objective {}\n", s.id, s.kind,
                           s.workload, s.device, s.gpu_name, s.started_at_utc, s.objective);
  std::cout << "decision: " << s.decision.value("reason", std::string("-")) << "\n";
  std::cout << "measured caps (a sweep table; `regime recommend --run sweep:" << s.id
            << " --objective O` decides it again):\n"
            << s.table_csv;
}

// A JSON value as one line of text: strings bare, null as "-", a decision by its reason.
std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("reason") && v["reason"].is_string())
    return v["reason"].get<std::string>();
  if (v.is_object()) return "(with --json)";
  return v.dump();
}

// Everything but a sweep: its summary, in text one field a line with the advice or reason the
// record carries, and the whole record (the command's own JSON) with --json.
void show_record(nlohmann::json j, const char* key, const nlohmann::json& value, bool json) {
  if (json) {
    j[key] = value;
    return print_json(j);
  }
  for (const auto& [name, v] : j.items())
    std::cout << fmt::format("{:<16} {}\n", name + ":", value_text(v));
  for (const char* said : {"advice", "reason"})
    if (value.is_object() && value.contains(said) && value[said].is_string())
      std::cout << fmt::format("{:<16} {}\n", std::string(said) + ":", value_text(value[said]));
  std::cout << fmt::format("(the whole record, {}: add --json)\n", key);
}

void show(const std::string& db, const std::string& ref, bool json) {
  session::StoredResult found = session::show_run(db, session::parse_run_ref(ref));
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, SweepRecord>)
          show_sweep(r, json);
        else if constexpr (std::is_same_v<T, RunRecord>)
          show_record(probe_json(r), "report", r.report, json);
        else if constexpr (std::is_same_v<T, StudyRecord>)
          show_record(study_json(r), "report", r.report, json);
        else if constexpr (std::is_same_v<T, DecisionRecord>)
          show_record(decision_json(r), "provenance",
                      {{"driver_version", r.provenance.driver_version},
                       {"regime_version", r.provenance.regime_version},
                       {"options", r.provenance.options}},
                      json);
        else
          show_record(control_json(r), "report", r.report, json);
      },
      found);
}

}  // namespace

void add_runs(CLI::App& root, Context&) {
  auto* runs = root.add_subcommand(
      "runs", "What the run database holds: probes, sweeps, studies, decisions, controller runs");
  auto db = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto limit = std::make_shared<size_t>(20);
  auto ref = std::make_shared<std::string>();
  auto filter = std::make_shared<session::RunsFilter>();
  runs->add_option("--db", *db, "Run database (default: STATE_DIR/runs.sqlite)");

  auto* list_cmd = runs->add_subcommand("list", "The newest results of each kind (the default)");
  for (CLI::App* app : {runs, list_cmd}) {
    app->add_option("--gpu", filter->gpu,
                    "Only results on this GPU: part of its name (H200), URI (nvml:1) or UUID");
    app->add_option("--workload", filter->workload,
                    "Only results of this workload: part of its name or command line");
  }
  list_cmd->add_option("--limit", *limit, "How many of each kind (0: all; default 20)")
      ->check(number_in(0, 1000000));
  auto* show_cmd = runs->add_subcommand("show", "One result in full");
  show_cmd
      ->add_option("run", *ref,
                   "ID or probe:ID (a probe), sweep:ID (a sweep or a study's), study:ID, "
                   "decision:ID, control:ID (a controller run)")
      ->required();
  for (CLI::App* app : {runs, list_cmd, show_cmd})
    app->add_flag("--json", *json, "Machine-readable output");
  runs->callback([=] {
    if (show_cmd->parsed())
      show(*db, *ref, *json);
    else
      list(*db, *limit, *filter, *json);
  });
}

}  // namespace regime::cli
