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
};

// Error InvalidArgument when the probe has no report, or its trace no samples of its GPU.
nlohmann::json study_page_data(const StudyPage& study, const std::vector<RunRecord>& store_runs,
                               const PageOptions& options);

}  // namespace regime::report
