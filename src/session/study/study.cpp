#include "session/study/study.hpp"

#include <fmt/core.h>

#include <cctype>
#include <filesystem>

#include "common/error.hpp"
#include "common/files.hpp"
#include "session/site/site.hpp"
#include "session/study/study_control.hpp"
#include "session/study/study_kept.hpp"
#include "session/study/study_probe.hpp"
#include "session/study/study_record.hpp"
#include "session/study/study_steps.hpp"
#include "session/study/study_view.hpp"
#include "session/study/study_whole_run.hpp"
#include "session/sweep/results_keeper.hpp"
#include "session/sweep/sweep_record.hpp"
#include "session/sweep/sweep_view.hpp"
#include "store/run_store.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

void check_probe_length(const StudyRequest& r) {
  if (!(r.probe_seconds >= 1 && r.probe_seconds <= 3600))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--probe-seconds must be in [1, 3600] s, got {}", r.probe_seconds));
}

StudyReport new_study_report(const StudyRequest& r, const RunSite& site) {
  if (r.settings.apply && site.physical && !r.actuate)
    throw Error(ErrorKind::ActuationRefused, "--apply changes a real GPU: add --actuate");
  if (!r.out_dir.empty()) create_output_dirs(r.out_dir);
  StudyReport rep;
  rep.device = r.device.text;
  rep.workload = site.workload;
  rep.probe_seconds = r.probe_seconds;
  rep.info = site.infos.front();
  if (site.simulated) rep.sim_model = r.device.devices.front().target;
  if (site.job()) {
    rep.job_devices = site.devices;
    rep.job_infos = site.infos;
  }
  return rep;
}

// What a study's results file holds: its JSON and, when it swept, the sweep table.
nlohmann::json study_results_json(const StudyReport& rep) {
  return {{"kind", "study"},
          {"report", rep.json},
          {"table_csv", rep.sweep ? nlohmann::json(sweep_table_csv(*rep.sweep)) : nullptr}};
}

// probe -> classify and plan -> sweep -> control -> keep: every step in a file of its own
// (session/study/study_steps.hpp), each taken once.
StudyReport study_one(const StudyRequest& r, ResultsKeeper& keeper) {
  check_probe_length(r);
  RunSite site =
      open_site(r.device, r.workload, "regime study --device nvml:0 -- python3 train.py");
  StudyReport rep = new_study_report(r, site);
  const ActuationPolicy policy = ActuationPolicy::from_flags(r.actuate);
  if (study_at_kept_decision(r, site, policy, rep)) return rep;  // --auto: nothing to search
  const nlohmann::json plan_settings = settings_json(r.settings, "plan");
  // One results file for the study: its sweep's results first, the whole study's replacing them.
  const std::string results_file = new_results_file_name("study");
  const auto keep_decided = [&] {
    const nlohmann::json swept = to_json(*rep.sweep);
    rep.sweep->store_failure =
        keeper.keep(results_file, sweep_results_json(*rep.sweep, "study", swept),
                    [&](RunStore& s) { keep_sweep(*rep.sweep, "study", swept, s, plan_settings); });
  };
  if (study_runs_whole(r)) {
    study_whole_run(r, site, policy, plan_settings, rep, keep_decided);
  } else {
    std::vector<RegimeReport> per_gpu = probe_at_current_limit(r, site, rep);
    plan_study(r, site, std::move(per_gpu), plan_settings, policy, rep);
    if (rep.skipped.empty()) {
      rep.sweep = sweep_site(site, rep.plan.caps, r.settings, policy);
      keep_decided();
    }
    // The sweep's run is stopped once it has decided (it fails where the command ends first);
    // with no sweep the probe's run is the last, and a command that ended in it was not stopped.
    rep.stopped_command = r.stop_after_decision && !r.workload.command.empty() &&
                          (rep.sweep || !rep.probe_command_ended);
  }
  study_control(r, site, policy, rep);
  rep.json = to_json(rep);
  if (!r.out_dir.empty())
    write_file_atomic(fs::path(r.out_dir) / "study.json", rep.json.dump(2) + "\n");
  rep.store_failure = keeper.keep(results_file, study_results_json(rep),
                                  [&](RunStore& s) { keep_study(r, s, plan_settings, rep); });
  if (rep.store_failure)
    rep.json["store_failed"] = to_json(*rep.store_failure);
  else if (rep.study_id)
    rep.json["study_stored_as"] = "study:" + std::to_string(*rep.study_id);
  return rep;
}

}  // namespace

std::vector<std::string> device_file_names(const DeviceSet& devices) {
  std::vector<std::string> names;
  for (const DeviceUri& d : devices.devices) {
    std::string name;
    for (char c : d.text) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    names.push_back(name);
  }
  return names;
}

StudyReport run_study(const StudyRequest& r) {
  ResultsKeeper keeper(r.settings.db);
  return study_one(r, keeper);
}

bool study_is_one_job(const DeviceSet& devices) {
  if (!runs_as_job(devices)) return false;
  for (const DeviceUri& d : devices.devices)
    if (d.scheme != "nvml") return false;
  return true;
}

bool studied_in_turn(const DeviceSet& devices) {
  return devices.devices.size() > 1 && !study_is_one_job(devices);
}

std::vector<StudyReport> run_studies(const StudyRequest& r) {
  ResultsKeeper keeper(r.settings.db);
  if (study_is_one_job(r.device)) return {study_one(r, keeper)};
  std::vector<StudyReport> out;
  const std::vector<std::string> names = device_file_names(r.device);
  for (size_t i = 0; i < r.device.devices.size(); ++i) {
    StudyRequest one = r;
    one.device = one_device(r.device.devices[i]);
    if (!r.out_dir.empty()) one.out_dir = (fs::path(r.out_dir) / names[i]).string();
    out.push_back(study_one(one, keeper));
  }
  return out;
}

}  // namespace regime::session
