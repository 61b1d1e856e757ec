#include "session/runs.hpp"

#include <fmt/core.h>

#include <charconv>
#include <ctime>

#include "common/error.hpp"

namespace regime::session {

namespace {

std::string utc_now_iso() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

RunStore open_store(const std::string& db) {
  return RunStore(db.empty() ? RunStore::default_path() : std::filesystem::path(db));
}

}  // namespace

RunRef parse_run_ref(const std::string& text) {
  RunRef ref;
  std::string number = text;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    std::string kind = text.substr(0, colon);
    number = text.substr(colon + 1);
    if (kind == "sweep")
      ref.kind = RunRef::Kind::Sweep;
    else if (kind != "probe")
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("run '{}': expected ID, probe:ID or sweep:ID", text));
  }
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), ref.id);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || ref.id < 1)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("run '{}': expected ID, probe:ID or sweep:ID with ID a positive "
                            "integer",
                            text));
  return ref;
}

RunsListing list_runs(const std::string& db, size_t limit) {
  RunStore store = open_store(db);
  return {std::filesystem::absolute(store.path()).string(), store.list(limit),
          store.list_sweeps(limit)};
}

std::variant<RunRecord, SweepRecord> show_run(const std::string& db, const RunRef& ref) {
  RunStore store = open_store(db);
  if (ref.kind == RunRef::Kind::Sweep) {
    if (auto s = store.get_sweep(ref.id)) return *s;
    throw Error(ErrorKind::NotFound,
                fmt::format("no sweep:{} in {}", ref.id, store.path().string()));
  }
  if (auto r = store.get(ref.id)) return *r;
  throw Error(ErrorKind::NotFound, fmt::format("no probe:{} in {}", ref.id, store.path().string()));
}

Redecision decide_again(const std::string& db, int64_t sweep_id, const plan::Objective& objective) {
  auto found = show_run(db, {RunRef::Kind::Sweep, sweep_id});
  Redecision out{std::get<SweepRecord>(found), {}, std::nullopt};
  SweepTable table = parse_sweep_table(out.sweep.table_csv, fmt::format("sweep:{}", sweep_id));
  if (table.workloads().size() != 1)
    throw Error(ErrorKind::Parse, fmt::format("sweep:{} holds {} workloads; a kept sweep holds one",
                                              sweep_id, table.workloads().size()));
  // A live sweep measured its default twice: decide again with both windows, as it did.
  out.recommendation =
      plan::recommend_kept(table, objective, plan::default_again_from(out.sweep.decision));
  // Every decision is kept, the ones made again too, beside the sweep it decides.
  RunStore store = open_store(db);
  {
    const plan::Recommendation& w = out.recommendation;
    DecisionRecord d;
    d.made_at_utc = utc_now_iso();
    d.source = "recommend";
    d.sweep_id = sweep_id;
    d.device = out.sweep.device;
    d.gpu_name = out.sweep.gpu_name;
    d.workload = out.sweep.workload;
    d.objective = objective.text();
    if (!w.decision.keep_default) d.cap_W = w.decision.cap_W;
    d.decision = plan::to_json(w.decision);
    d.provenance.driver_version = out.sweep.provenance.driver_version;
    d.provenance.options = {{"objective", objective.text()},
                            {"run", fmt::format("sweep:{}", sweep_id)}};
    out.decision_id = store.insert_decision(d);
  }
  return out;
}

}  // namespace regime::session
