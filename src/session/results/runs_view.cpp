#include "session/results/runs_view.hpp"

#include <fmt/core.h>

#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>
#include <variant>

#include "common/json_fields.hpp"

namespace regime::session {

namespace {

// The fields every stored run's row starts with: its name ("sweep:2"), when it started, where, on
// which GPU and what ran; then `rest`, its own.
template <class Record>
nlohmann::json row_json(std::string_view kind, const Record& r, const std::string& host,
                        const nlohmann::json& rest) {
  nlohmann::json j = {{"run", fmt::format("{}:{}", kind, r.id)},
                      {"started_at_utc", r.started_at_utc},
                      {"device", r.device},
                      {"host", host},
                      {"gpu", r.gpu_name},
                      {"workload", r.workload}};
  j.update(rest);
  return j;
}

nlohmann::json probe_json(const RunRecord& r) {
  return row_json(
      "probe", r, r.host,
      {{"status", r.status}, {"regime", json_or_null(r.regime)}, {"trace", r.trace_path}});
}

nlohmann::json sweep_json(const SweepRecord& s) {
  return row_json("sweep", s, s.provenance.host,
                  {{"kind", s.kind}, {"objective", s.objective}, {"decision", s.decision}});
}

nlohmann::json study_json(const StudyRecord& s) {
  const auto sweep =
      s.sweep_id ? std::optional(fmt::format("sweep:{}", *s.sweep_id)) : std::nullopt;
  return row_json("study", s, s.provenance.host,
                  {{"regime", json_or_null(s.regime)},
                   {"sweep", json_or_null(sweep)},
                   {"decision", s.decision}});
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
          {"cap_W", json_or_null(d.cap_W)},
          {"decision", d.decision}};
}

nlohmann::json control_json(const ControlRunRecord& c) {
  const nlohmann::json& r = c.report;
  return row_json("control", c, c.provenance.host,
                  {{"policy", c.policy},
                   {"engaged", r.value("engaged", false)},
                   {"verdict", r.contains("verdict") ? r["verdict"] : nlohmann::json(nullptr)}});
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

// A JSON value as one line of text: strings bare, null as "-", a decision by its reason.
std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("reason") && v["reason"].is_string())
    return v["reason"].get<std::string>();
  if (v.is_object()) return "(with --json)";
  return v.dump();
}

// Everything but a sweep is shown as its summary and the part of the record `key` names: the
// whole record (the command's own JSON), or a decision's provenance.
struct Summary {
  nlohmann::json row;
  const char* key;
  nlohmann::json value;
};

Summary summary(const StoredResult& result) {
  return std::visit(
      [](const auto& r) -> Summary {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, SweepRecord>) {
          return {sweep_json(r), "report", r.report};
        } else if constexpr (std::is_same_v<T, RunRecord>) {
          return {probe_json(r), "report", r.report};
        } else if constexpr (std::is_same_v<T, StudyRecord>) {
          return {study_json(r), "report", r.report};
        } else if constexpr (std::is_same_v<T, DecisionRecord>) {
          return {decision_json(r),
                  "provenance",
                  {{"driver_version", r.provenance.driver_version},
                   {"regime_version", r.provenance.regime_version},
                   {"options", r.provenance.options}}};
        } else {
          return {control_json(r), "report", r.report};
        }
      },
      result);
}

std::string sweep_text(const SweepRecord& s) {
  return fmt::format("sweep:{} ({}) of {} on {} ({}), {}, objective {}\n", s.id, s.kind, s.workload,
                     s.device, s.gpu_name, s.started_at_utc, s.objective) +
         "decision: " + s.decision.value("reason", std::string("-")) + "\n" +
         fmt::format(
             "measured caps (a sweep table; `regime recommend --run sweep:{} --objective "
             "O` decides it again):\n",
             s.id) +
         s.table_csv;
}

}  // namespace

nlohmann::json to_json(const RunsListing& l, const RunsFilter& filter) {
  return {{"db", l.location},
          {"filter", {{"gpu", filter.gpu}, {"workload", filter.workload}}},
          {"probes", rows_json(l.probes, probe_json)},
          {"sweeps", rows_json(l.sweeps, sweep_json)},
          {"studies", rows_json(l.studies, study_json)},
          {"decisions", rows_json(l.decisions, decision_json)},
          {"control_runs", rows_json(l.control_runs, control_json)}};
}

std::string to_text(const RunsListing& l, const RunsFilter& filter) {
  std::string out = fmt::format(
      "{}: {} probe(s), {} sweep(s), {} study(ies), {} decision(s), {} controller run(s) shown, "
      "newest first{}\n",
      l.location, l.probes.size(), l.sweeps.size(), l.studies.size(), l.decisions.size(),
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
  const bool by_host = hosts.size() > 1 || l.on_server;
  auto row = [by_host, &out](const std::string& ref, const std::string& when,
                             const std::string& host, const std::string& device,
                             const std::string& a, const std::string& b,
                             const std::string& workload) {
    fmt::format_to(std::back_inserter(out), "  {:<12} {:<20}  {}{:<10} {:<14} {:<13} {}\n", ref,
                   when, by_host ? fmt::format("{:<12} ", host.empty() ? "-" : host) : "", device,
                   a, b, workload);
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
  return out;
}

nlohmann::json to_json(const StoredResult& result) {
  Summary s = summary(result);
  if (const auto* sweep = std::get_if<SweepRecord>(&result)) {
    s.row["table_csv"] = sweep->table_csv;
    s.row["report"] = sweep->report;
    return s.row;
  }
  s.row[s.key] = s.value;
  return s.row;
}

std::string to_text(const StoredResult& result) {
  if (const auto* sweep = std::get_if<SweepRecord>(&result)) return sweep_text(*sweep);
  const Summary s = summary(result);
  std::string out;
  auto to = std::back_inserter(out);
  for (const auto& [name, v] : s.row.items())
    fmt::format_to(to, "{:<16} {}\n", name + ":", value_text(v));
  for (const char* said : {"advice", "reason"})
    if (s.value.is_object() && s.value.contains(said) && s.value[said].is_string())
      fmt::format_to(to, "{:<16} {}\n", std::string(said) + ":", value_text(s.value[said]));
  fmt::format_to(to, "(the whole record, {}: add --json)\n", s.key);
  return out;
}

}  // namespace regime::session
