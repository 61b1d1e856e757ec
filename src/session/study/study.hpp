#pragma once
// `regime study`, the main job (docs/architecture.md): probe the pair at the current limit, name
// its regime, sweep the caps the regime warrants (a physical GPU only with --actuate, never under
// REGIME_READ_ONLY), decide, and say what was left set.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/classify.hpp"
#include "analysis/whole_run.hpp"
#include "common/gpu_info.hpp"
#include "plan/study_plan.hpp"
#include "session/control/control.hpp"
#include "session/site/target.hpp"
#include "session/study/study_types.hpp"
#include "session/sweep/sweep.hpp"
#include "trace/trace.hpp"

namespace regime::session {

// True when --device names one job on several real GPUs (nvml:0,1, nvml:all with several GPUs,
// nvml:job): studied as one job by run_study. A list of simulated GPUs is not a job.
bool study_is_one_job(const DeviceSet& devices);

// True when the list names several devices studied in turn (not one job's GPUs): then
// run_studies gives one report each, printed as one table.
bool studied_in_turn(const DeviceSet& devices);

// A name for each device of the list that is safe in a file name ("sim:t4,ambient_C=35" ->
// "sim_t4_ambient_C_35"; a list names each device once): each device studied in turn keeps its
// --out files in a folder of that name, and its --report page in a file named with it.
std::vector<std::string> device_file_names(const DeviceSet& devices);

// Every device of the list studied in turn (each simulated GPU is a machine of its own), each
// kept in the run database (opened once for them all); one job's GPUs (study_is_one_job) as one
// study.
std::vector<StudyReport> run_studies(const StudyRequest& request);

// Throws WorkloadFailed when the workload fails during the probe or ends before the sweep is done
// (any limit already restored), and the typed errors of the layers below; not the run database's:
// a store that fails to keep the study leaves `store_failure` (and "store_failed" in its JSON)
// saying what failed and where the results are kept.
StudyReport run_study(const StudyRequest& request);

}  // namespace regime::session
