#include "session/sweep/sweep_record.hpp"

#include "common/utc_time.hpp"
#include "present/render.hpp"
#include "session/sweep/results_keeper.hpp"
#include "session/sweep/sweep_view.hpp"
#include "store/run_store.hpp"

namespace regime::session {

nlohmann::json sweep_results_json(const SweepReport& r, const std::string& kind,
                                  const nlohmann::json& json) {
  return {{"kind", kind}, {"report", json}, {"table_csv", sweep_table_csv(r)}};
}

std::optional<int64_t> keep_sweep(SweepReport& r, const std::string& kind,
                                  const nlohmann::json& json, const DatabaseLocation& db,
                                  const nlohmann::json& options) {
  ResultsKeeper keeper(db);
  r.store_failure =
      keeper.keep(new_results_file_name(kind), sweep_results_json(r, kind, json),
                  [&](RunStore& store) { keep_sweep(r, kind, json, store, options); });
  if (r.store_failure) r.kept_in = db.path().string();
  return r.stored_id;
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
  rec.strategy = json.at("strategy").get<std::string>();
  rec.objective = r.objective.text();
  rec.default_limit_W = r.info.default_limit_W;
  rec.max_limit_W = r.info.max_limit_W;
  rec.table_csv = sweep_table_csv(r);
  rec.decision = json.at("decision");
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
  r.kept_in = store.location();
  return *r.stored_id;
}

}  // namespace regime::session
