#pragma once
// A study's page as data, one for the study just run (`regime study --report FILE`) and for one
// the run store kept (`regime report study:ID`): its probe's timeline, regime and evidence, its
// sweep with the decision marked (or why none ran), the command's whole run, and what became of
// the limit. Pure: the parts in, the page JSON out (render_html draws it).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/page.hpp"
#include "report/restore.hpp"
#include "store/run_store.hpp"
#include "trace/trace.hpp"

namespace regime::report {

// One GPU of a study of a job's GPUs: its own probe figures, regime and trace.
struct StudyGpu {
  std::string device;  // as the job named it: "nvml:1"
  std::string gpu_name;
  std::string gpu_uuid;
  // Its probe's classify JSON: regime, confidence, advice, evidence, measurement.
  nlohmann::json regime;
  const Trace* trace = nullptr;  // its probe trace; null where none was saved
  std::string trace_path;        // where the trace is, or why there is none
};

struct StudyPage {
  std::string title;
  // The study's probe as a run: its report the regime's JSON (regime, confidence, evidence,
  // measurement), its trace_path where the trace was saved.
  RunRecord probe;
  const Trace* trace = nullptr;  // the probe's trace; null where none was saved
  std::string no_trace;          // why there is none, shown in the timeline's place
  nlohmann::json sweep;          // sweep_section, null when no sweep ran
  std::string sweep_skipped;     // why no sweep ran
  nlohmann::json whole_run;      // the command run whole under the study, else null
  // The original limit the sweep put back as the study ended, when known; else `after`, the
  // study's own line of what the sweep left set, stands on the decision card.
  std::optional<LimitRestored> restored;
  std::string after;
  // A study of a job's GPUs: each GPU (in the job's order), the one whose regime named the job,
  // and the sweep's figures of each GPU at each cap (the sweep's "per_gpu": [{cap_W, gpus:
  // [{device, energy_per_step_J, avg_power_W, time_per_step_s}]}]). Empty for one GPU.
  std::vector<StudyGpu> gpus;
  size_t regime_gpu = 0;
  nlohmann::json per_gpu_sweep;
  // The job's measurement (energy summed over its GPUs, power their mean, the shared steps): a
  // job's cards show it, as its sweep measures the job; null to keep the regime's GPU's.
  nlohmann::json job_measurement;
};

// Each GPU of a job's study for its own section of the page: device, name, UUID, whether its
// regime named the job, its regime with the evidence, its measurement, its timeline (null with
// "no_timeline" where no trace was saved), its figures at each cap the sweep measured (ascending),
// and what the job's one cap did to it ("decision": the cap, its figures at the default and at
// the cap, the change of energy per step; null where no sweep ran). `sweep` is sweep_section's
// object or null. Error InvalidArgument when a trace holds no sample.
nlohmann::json study_gpus_data(const std::vector<StudyGpu>& gpus, size_t regime_gpu,
                               const nlohmann::json& per_gpu_sweep, const nlohmann::json& sweep,
                               size_t columns);

// Error InvalidArgument when the probe has no report, or its trace no samples of its GPU. A job's
// page ("gpus" from study_gpus_data) draws each GPU's timeline in its own section and none above.
nlohmann::json study_page_data(const StudyPage& study, const std::vector<RunRecord>& store_runs,
                               const PageOptions& options);

}  // namespace regime::report
