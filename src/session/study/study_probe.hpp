#pragma once
// The study's probe: one run at the current limit, watched until the card has stopped heating,
// measured and classified on each GPU (once: the later steps take the reports).
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/measure.hpp"
#include "run/run_loop.hpp"
#include "session/site/site.hpp"
#include "session/study/study_types.hpp"

namespace regime::session {

// Where the probe's trace of GPU `gpu` of `gpus` goes in the study's output folder:
// DIR/probe.trace.csv for one GPU, DIR/probe-gpuN.trace.csv for a job's (steps and power files
// beside it, as trace/csv.hpp's siblings).
std::filesystem::path probe_trace_file(const std::string& out_dir, size_t gpu, size_t gpus);

// One run at the current limit on the site's GPUs; nothing is changed. A card
// still heating after probe_seconds is watched on until its temperature is flat (or
// max_probe_seconds), and the last probe_seconds are measured. With an output folder the traces
// go to DIR/probe.trace.csv and its siblings. Fills the probe's part of `rep` (trace, time run,
// heating, warnings); WorkloadFailed when the workload fails or too little was measured to name
// a regime. Each GPU's regime report, in the site's order.
std::vector<RegimeReport> probe_at_current_limit(const StudyRequest& request, RunSite& site,
                                                 StudyReport& rep);

// The probe on a run that goes on after it (the study inside the command's one run): the same
// rules, on the started `loop`, which is left running. A command that ends during the probe is
// not an error: `per_gpu` is then empty when too little was measured, and `unnamed` says why.
struct LiveProbe {
  std::vector<RegimeReport> per_gpu;  // each GPU's regime, in the site's order
  std::string unnamed;                // why no regime was named
  double end_s = 0;                   // when the probe ended, on the run's clock
  bool command_ended = false;         // the workload ended during the probe
};
LiveProbe probe_on_run(const StudyRequest& request, RunSite& site, RunLoop& loop, Workload& work,
                       StudyReport& rep);

}  // namespace regime::session
