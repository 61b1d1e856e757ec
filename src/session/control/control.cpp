#include "session/control/control.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "act/guard_set.hpp"
#include "analysis/measure.hpp"
#include "common/error.hpp"
#include "common/utc_time.hpp"
#include "common/version.hpp"
#include "session/control/control_steps.hpp"
#include "session/control/control_view.hpp"
#include "session/settings.hpp"
#include "session/site/command_gpus.hpp"
#include "store/run_store.hpp"

namespace regime::session {

namespace {

void keep_control_run(ControlReport& rep, const ControlRequest& r) {
  ControlRunRecord rec;
  rec.started_at_utc = utc_now_iso();
  rec.device = rep.device;
  rec.gpu_name =
      rep.gpus.size() > 1 ? fmt::format("{}x {}", rep.gpus.size(), rep.info.name) : rep.info.name;
  rec.gpu_uuid = rep.gpus.size() > 1 ? "" : rep.info.uuid;
  rec.workload = rep.workload;
  rec.policy = rep.policy;
  rec.provenance.driver_version = rep.simulated ? "sim" : rep.info.driver_version;
  rec.provenance.regime_version = regime_version();
  rec.provenance.options = {{"seconds", r.seconds},        {"sample_ms", r.sample_ms},
                            {"evaluate", r.evaluate},      {"windows", r.windows},
                            {"dry_run", rep.dry_run},      {"actuate", r.actuate},
                            {"job_devices", r.device.text}};
  rec.report = to_json(rep);
  RunStore store(r.db);
  rep.stored_id = store.insert_control_run(rec);
}

// What the command uses against what is measured: by CUDA_VISIBLE_DEVICES now (the processes
// NVML lists are added as the run goes). Nothing for a simulated device.
void note_devices_used(ControlReport& rep, const std::vector<GpuInfo>& infos,
                       const WorkloadSpec& workload, bool job) {
  if (rep.simulated) return;
  rep.usage =
      job ? job_devices_json(infos, workload) : one_gpu_devices_json(infos.front(), workload);
  if (rep.usage.is_object())
    for (const auto& w : rep.usage.value("warnings", std::vector<std::string>{}))
      rep.warnings.push_back(w);
}

}  // namespace

// The named steps of control_steps.hpp, in order; the guards restore every GPU's limit at the end
// and when the workload fails.
ControlReport run_control(const ControlRequest& request, const ChooseSeconds& choose_seconds) {
  ControlRequest r = request;
  ControlSetup s = open_control(r, choose_seconds);
  ControlReport rep = s.lanes.front().rep;
  if (s.job()) rep.device = r.device.text;
  WorkloadPtr work = s.targets.front().make_workload(r.workload);
  std::vector<GpuInfo> infos;
  for (const ControlGpu& l : s.lanes) infos.push_back(l.rep.info);
  note_devices_used(rep, infos, r.workload, s.job());
  JobProcessWatch watch(infos, r.workload);
  PowerLimitGuardSet guards(s.gpus, s.policy);
  RecordedControlRun run;
  try {
    run = record_control_run(r, s, *work, rep, guards, watch);
  } catch (const WorkloadFailed& e) {
    guards.restore();
    throw WorkloadFailed(std::string(e.what()) + "; the original power limit was restored",
                         e.exit_status);
  }
  guards.restore();
  add_process_findings(watch, rep.usage, rep.warnings);
  const LaneFigures figures = measure_lanes(r, s, run, rep.evaluation.has_value());
  if (s.job())
    gather_job_report(rep, s.lanes, figures, run.stats);
  else
    rep = one_gpu_report(s.lanes.front().rep, rep);
  keep_control_run(rep, r);
  return rep;
}

}  // namespace regime::session
