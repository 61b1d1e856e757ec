#include "session/results/runs.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <tuple>

#include "analysis/sweep_rows.hpp"
#include "common/error.hpp"
#include "common/utc_time.hpp"

namespace regime::session {

namespace {

// A read opens only a database that is there: a mistyped --db must not create folders and an empty
// database and then list nothing as if nothing had been kept.
void require_existing(const DatabaseLocation& db) {
  if (db.is_server()) return;  // connecting says whether it is there
  const std::filesystem::path path = db.path();
  if (!std::filesystem::exists(path))
    throw Error(ErrorKind::NotFound,
                fmt::format("no run database at {}: nothing was kept there (probes, sweeps and "
                            "studies create it; check --db)",
                            path.string()));
}

}  // namespace

namespace {

constexpr std::pair<RunRef::Kind, const char*> kKinds[] = {{RunRef::Kind::Probe, "probe"},
                                                           {RunRef::Kind::Sweep, "sweep"},
                                                           {RunRef::Kind::Study, "study"},
                                                           {RunRef::Kind::Decision, "decision"},
                                                           {RunRef::Kind::Control, "control"}};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& text, const std::string& part) {
  return lower(text).find(lower(part)) != std::string::npos;
}

// The newest `limit` (0: all) of the rows the filter keeps.
template <class Record, class Fields>
std::vector<Record> kept(std::vector<Record> rows, size_t limit, const RunsFilter& f,
                         Fields fields) {
  std::vector<Record> out;
  for (auto& r : rows) {
    if (limit > 0 && out.size() >= limit) break;
    auto [device, name, uuid, workload] = fields(r);
    if (matches(f, device, name, uuid, workload)) out.push_back(std::move(r));
  }
  return out;
}

template <class Record>
Record or_not_found(std::optional<Record> r, const RunRef& ref, const RunStore& store) {
  if (r) return *r;
  throw Error(ErrorKind::NotFound,
              fmt::format("no {}:{} in {}", to_string(ref.kind), ref.id, store.path().string()));
}

}  // namespace

std::string to_string(RunRef::Kind kind) {
  for (auto [k, name] : kKinds)
    if (k == kind) return name;
  return "?";
}

std::optional<RunRef::Kind> run_kind_named(const std::string& name) {
  for (auto [k, kind_name] : kKinds)
    if (name == kind_name) return k;
  return std::nullopt;
}

bool matches(const RunsFilter& f, const std::string& device, const std::string& gpu_name,
             const std::string& gpu_uuid, const std::string& workload) {
  const bool gpu_ok = f.gpu.empty() || contains(gpu_name, f.gpu) || contains(device, f.gpu) ||
                      (!gpu_uuid.empty() && contains(gpu_uuid, f.gpu));
  return gpu_ok && (f.workload.empty() || contains(workload, f.workload));
}

RunsListing list_runs(const DatabaseLocation& db, size_t limit, const RunsFilter& f) {
  RunsListing l;
  // Nothing kept yet in the default place is an empty listing; a --db that is not there is an
  // error.
  if (db.is_default() && !std::filesystem::exists(db.path())) {
    l.location = std::filesystem::absolute(db.path()).string();
    return l;
  }
  require_existing(db);
  RunStore store(db);
  l.location = store.location();
  l.on_server = store.is_server();
  auto same = [](const auto& r) {
    return std::tuple<std::string, std::string, std::string, std::string>{r.device, r.gpu_name,
                                                                          r.gpu_uuid, r.workload};
  };
  l.probes = kept(store.list(), limit, f, same);
  l.sweeps = kept(store.list_sweeps(), limit, f, same);
  l.studies = kept(store.list_studies(), limit, f, same);
  l.decisions = kept(store.list_decisions(), limit, f, [](const DecisionRecord& d) {
    return std::tuple<std::string, std::string, std::string, std::string>{d.device, d.gpu_name, "",
                                                                          d.workload};
  });
  l.control_runs = kept(store.list_control_runs(), limit, f, same);
  return l;
}

StoredResult show_run(const DatabaseLocation& db, const RunRef& ref) {
  require_existing(db);
  RunStore store(db);
  switch (ref.kind) {
    case RunRef::Kind::Probe:
      return or_not_found(store.get(ref.id), ref, store);
    case RunRef::Kind::Sweep:
      return or_not_found(store.get_sweep(ref.id), ref, store);
    case RunRef::Kind::Study:
      return or_not_found(store.get_study(ref.id), ref, store);
    case RunRef::Kind::Decision:
      return or_not_found(store.get_decision(ref.id), ref, store);
    case RunRef::Kind::Control:
      return or_not_found(store.get_control_run(ref.id), ref, store);
  }
  throw Error(ErrorKind::InvalidArgument, "unknown kind of run");
}

namespace {

// The rows of one (workload, gpu) as a table of their own.
SweepTable only(const SweepTable& table, const std::string& workload, const std::string& gpu) {
  SweepTable one;
  one.source = table.source;
  for (const SweepRow& r : table.rows)
    if (r.workload == workload && r.gpu == gpu) one.rows.push_back(r);
  for (const SweepRow& r : table.again)
    if (r.workload == workload && r.gpu == gpu) one.again.push_back(r);
  return one;
}

// Decided again with the default's second window when there is one: recommend_kept, as the live
// sweep decided.
TableDecision decide_one(plan::Recommendation rec, const SweepTable& one,
                         const std::optional<Measurement>& again,
                         const plan::Objective& objective) {
  std::vector<plan::ProbeResult> probes = plan::probes_from_rows(one.rows);
  if (again) rec = plan::recommend_kept(one, objective, again);
  plan::DecisionView view = plan::decision_view(rec.decision, probes, objective,
                                                default_limit_W(one.rows), one.rows.front().unit);
  return {std::move(rec), std::move(probes), std::move(view)};
}

std::optional<Measurement> again_of(const SweepTable& one, const std::string& source) {
  if (one.again.empty()) return std::nullopt;
  const SweepRow& a = one.again.front();
  const double default_W = default_limit_W(one.rows);
  if (a.cap_W != default_W)
    throw Error(ErrorKind::Parse,
                fmt::format("{}:{}: the row of window 'again' for workload '{}' is at {} W; only "
                            "the default ({} W) is measured again",
                            source, a.line, a.workload, a.cap_W, default_W));
  return to_measurement(a);
}

}  // namespace

std::vector<TableDecision> decide_table(const SweepTable& table, const plan::Objective& objective) {
  std::vector<TableDecision> out;
  for (plan::Recommendation& rec : plan::recommend(table, objective)) {
    SweepTable one = only(table, rec.workload, rec.gpu);
    const auto again = again_of(one, table.source);
    out.push_back(decide_one(std::move(rec), one, again, objective));
  }
  return out;
}

Redecision decide_again(const DatabaseLocation& db, int64_t sweep_id,
                        const plan::Objective& objective) {
  auto found = show_run(db, {RunRef::Kind::Sweep, sweep_id, fmt::format("sweep:{}", sweep_id)});
  Redecision out{std::get<SweepRecord>(found), {}, std::nullopt};
  SweepTable table = parse_sweep_table(out.sweep.table_csv, fmt::format("sweep:{}", sweep_id));
  if (table.workloads().size() != 1)
    throw Error(ErrorKind::Parse, fmt::format("sweep:{} holds {} workloads; a kept sweep holds one",
                                              sweep_id, table.workloads().size()));
  // A live sweep measured its default twice: decide again with both windows, as it did (a sweep
  // kept before its table carried the second window has it in its decision's evidence).
  std::optional<Measurement> again = again_of(table, table.source);
  if (!again) again = plan::default_again_from(out.sweep.decision);
  std::vector<plan::Recommendation> recs = plan::recommend(table, objective);
  out.decided = decide_one(std::move(recs.front()), table, again, objective);
  // Every decision is kept, the ones made again too, beside the sweep it decides.
  RunStore store(db);
  {
    const plan::Decision& w = out.decided.recommendation.decision;
    DecisionRecord d;
    d.made_at_utc = utc_now_iso();
    d.source = "recommend";
    d.sweep_id = sweep_id;
    d.device = out.sweep.device;
    d.gpu_name = out.sweep.gpu_name;
    d.workload = out.sweep.workload;
    d.objective = objective.text();
    if (!w.keep_default) d.cap_W = w.cap_W;
    d.decision = plan::decision_json(w, out.decided.view);
    d.provenance.driver_version = out.sweep.provenance.driver_version;
    d.provenance.options = {{"objective", objective.text()},
                            {"run", fmt::format("sweep:{}", sweep_id)}};
    out.decision_id = store.insert_decision(d);
  }
  return out;
}

}  // namespace regime::session
