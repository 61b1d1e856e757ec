#include "report/study_page.hpp"

namespace regime::report {

nlohmann::json study_page_data(const StudyPage& s, const std::vector<RunRecord>& store_runs,
                               const PageOptions& options) {
  nlohmann::json page = s.trace
                            ? build_page_data(s.probe, *s.trace, store_runs, options)
                            : build_untraced_page_data(s.probe, s.no_trace, store_runs, options);
  page["title"] = s.title;
  page["kind"] = "study";
  if (!s.sweep.is_null())
    page["sweep"] = s.sweep;
  else
    page["sweep_skipped"] = s.sweep_skipped;
  if (!s.whole_run.is_null()) page["whole_run"] = s.whole_run;
  const std::string gpu =
      s.probe.gpu_name + (s.probe.gpu_uuid.empty() ? std::string() : " (" + s.probe.gpu_uuid + ")");
  if (s.restored)
    page["restore"] = limit_restore_section(s.restored, {}, gpu);
  else if (!s.after.empty())  // as the study said it, where the limit put back is not known
    page["restore"] = {{"changed", true},
                       {"restored", s.after.rfind("restored", 0) == 0},
                       {"stated", true},
                       {"gpu", gpu},
                       {"text", "After the sweep: " + s.after + "."}};
  return page;
}

}  // namespace regime::report
