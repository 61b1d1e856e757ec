#include "session/study/study_record.hpp"

#include <fmt/core.h>

#include <filesystem>

#include "common/utc_time.hpp"
#include "store/run_store.hpp"

namespace regime::session {

void keep_study(const StudyRequest& r, RunStore& store, const nlohmann::json& options,
                StudyReport& rep) {
  StudyRecord rec;
  rec.started_at_utc = utc_now_iso();
  rec.device = rep.device;
  const bool job = !rep.job_devices.empty();
  rec.gpu_name = job ? fmt::format("{}x {}", rep.job_devices.size(), rep.info.name) : rep.info.name;
  rec.gpu_uuid = job ? "" : rep.info.uuid;
  rec.workload = rep.workload;
  rec.regime = rep.json.at("regime").at("regime").get<std::string>();
  if (rep.sweep) {
    rec.sweep_id = rep.sweep->stored_id;
    rec.decision = rep.json.at("decision");
  }
  rec.report = rep.json;
  rec.provenance.driver_version = rep.info.driver_version;
  rec.provenance.options = options;
  rec.provenance.options["probe_seconds"] = r.probe_seconds;
  rec.provenance.options["max_probe_seconds"] = r.max_probe_seconds;
  rec.provenance.options["actuate"] = r.actuate;
  // Where the probe's trace went, so that `regime report study:ID` can draw it later; null (not
  // absent) where it went nowhere, so that a study kept before this was recorded reads apart.
  rec.provenance.options["out_dir"] =
      r.out_dir.empty() ? nlohmann::json()
                        : nlohmann::json(std::filesystem::absolute(r.out_dir).string());
  rep.study_id = store.insert_study(rec);
}

}  // namespace regime::session
