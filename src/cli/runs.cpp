// regime runs [list] [--db FILE] [--limit N] [--json] | regime runs show ID|probe:ID|sweep:ID:
// what the run database holds (src/session/runs.hpp).
#include "session/runs.hpp"

#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"

namespace regime::cli {

namespace {

nlohmann::json probe_json(const RunRecord& r) {
  return {{"run", fmt::format("probe:{}", r.id)},
          {"started_at_utc", r.started_at_utc},
          {"device", r.device},
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
          {"gpu", s.gpu_name},
          {"workload", s.workload},
          {"objective", s.objective},
          {"decision", s.decision}};
}

void list(const std::string& db, size_t limit, bool json) {
  session::RunsListing l = session::list_runs(db, limit);
  if (json) {
    nlohmann::json probes = nlohmann::json::array(), sweeps = nlohmann::json::array();
    for (const auto& r : l.probes) probes.push_back(probe_json(r));
    for (const auto& s : l.sweeps) sweeps.push_back(sweep_json(s));
    print_json({{"db", l.db}, {"probes", probes}, {"sweeps", sweeps}});
    return;
  }
  std::cout << fmt::format("{}: {} probe(s), {} sweep(s) shown, newest first\n", l.db,
                           l.probes.size(), l.sweeps.size());
  for (const auto& r : l.probes)
    std::cout << fmt::format("  probe:{:<5} {}  {:<10} {:<14} {:<7} {}\n", r.id, r.started_at_utc,
                             r.device, r.regime.value_or("-"), r.status, r.workload);
  for (const auto& s : l.sweeps) {
    bool keep = s.decision.value("keep_default", true);
    std::string decided =
        keep ? "keep default" : fmt::format("{:g} W", s.decision.value("cap_W", 0.0));
    std::cout << fmt::format("  sweep:{:<5} {}  {:<10} {:<5} {:<13} {}\n", s.id, s.started_at_utc,
                             s.device, s.kind, decided, s.workload);
  }
}

void show(const std::string& db, const std::string& ref, bool json) {
  auto found = session::show_run(db, session::parse_run_ref(ref));
  if (const auto* r = std::get_if<RunRecord>(&found)) {
    nlohmann::json j = probe_json(*r);
    j["report"] = r->report;
    if (json) return print_json(j);
    std::cout << j.dump(2) << "\n";
    return;
  }
  const auto& s = std::get<SweepRecord>(found);
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

}  // namespace

void add_runs(CLI::App& root, Context&) {
  auto* runs = root.add_subcommand("runs", "What the run database holds: probes and sweeps");
  auto db = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto limit = std::make_shared<size_t>(20);
  auto ref = std::make_shared<std::string>();
  runs->add_option("--db", *db, "Run database (default: STATE_DIR/runs.sqlite)");
  runs->add_flag("--json", *json, "Machine-readable output");
  auto* list_cmd = runs->add_subcommand("list", "The newest probes and sweeps (the default)");
  list_cmd->add_option("--limit", *limit, "How many of each (0: all; default 20)");
  auto* show_cmd = runs->add_subcommand("show", "One probe or sweep in full");
  show_cmd->add_option("run", *ref, "ID or probe:ID (a probe), sweep:ID (a sweep or study)")
      ->required();
  runs->callback([=] {
    if (show_cmd->parsed())
      show(*db, *ref, *json);
    else
      list(*db, *limit, *json);
  });
}

}  // namespace regime::cli
