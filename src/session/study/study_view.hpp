#pragma once
// How a study is shown, in one place: the JSON that `--json` prints, study.json holds and the run
// database keeps, and the table of a study of several GPUs.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "session/study/study_types.hpp"
#include "session/sweep/sweep_view.hpp"

namespace regime::session {

// One row of the study of several GPUs (`regime study --device sim:t4,sim:gv100,sim:l4`).
struct StudyRow {
  std::string device;
  std::string gpu;
  std::string regime;
  double default_limit_W = 0;
  // Energy per step at each measured cap against the default, highest cap first: {cap_W, dE %}.
  std::vector<std::pair<double, double>> energy_vs_default_pct;
  std::string decision;  // "keep default" or "64 W"
  // "measured" on a real GPU; on a simulated one "calibrated" when the decided cap lies within
  // the caps its twin was calibrated at (docs/twin.md), else "predicted".
  std::string basis;
  bool controller_may_help = false;  // what the regime says of a thermal controller
  // The gated controller's evaluated effect on energy per step (StudyControl), when it ran:
  // the change in % with its 95% interval and the verdict; empty when it stayed out.
  std::optional<double> controller_effect_pct;
  Interval controller_effect_ci_pct{0, 0};
  std::string controller_verdict;  // the verdict, or why it did not run
};
StudyRow study_row(const StudyReport& report);
std::string format_study_table(const std::vector<StudyRow>& rows);

// What `regime study` prints: the probe and its regime, the sweep and its decision, what was left
// set, the gated controller; where the files went (the request's --out) and how to draw the
// study again from the store it was kept in (its --db).
std::string to_text(const StudyReport& report, const StudyRequest& request);
// Several GPUs studied in turn: one table, a row each; and their JSON, each study's with the
// basis of its decision ("measured", "calibrated" or "predicted") added.
std::string to_text(const std::vector<StudyReport>& reports);
nlohmann::json to_json(const std::vector<StudyReport>& reports);

// The study's JSON (StudyReport::json, written to OUT/study.json and kept in the run database).
nlohmann::json to_json(const StudyReport& report);

}  // namespace regime::session
