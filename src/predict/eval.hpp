#pragma once
// Scoring predictions against measurements: the mean absolute percentage error of the power and
// the share of regimes named right, per GPU (or per GPU and model family), with a bootstrap
// interval of the MAPE. The measured cases come from sweep tables, traces or the run store
// (session/predict/predict.cpp); everything here is pure but for the predictor it is handed.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/measurement.hpp"
#include "predict/predictor.hpp"
#include "trace/sweep_table.hpp"

namespace regime::predict {

struct MeasuredCase {
  std::string gpu;                    // as the data names it ("V100", "h200")
  std::string workload;               // as the data names it
  double avg_power_W = 0;             // at the default limit
  std::optional<std::string> regime;  // measured, when the data can tell
  std::string source;                 // file or record it came from
};

// One case per workload and GPU of a sweep table: the row at its default limit (the table's
// default_limit_W, else the highest cap, as `regime recommend` takes it). The regime from means
// alone: cap-bound when the mean power is within 5% of that limit (analysis kCapPowerRatio), else
// headroom (a table has no utilization, so underutilized is never named from one).
std::vector<MeasuredCase> cases_from_table(const SweepTable& table, const std::string& source);

// Of one workload's rows on one GPU, the row at its default limit (trace's default_limit_W; the
// table's parser makes sure there is one).
const SweepRow& row_at_default(const std::vector<SweepRow>& rows);

// Which workload is the one-shot example of its group.
enum class ExampleMode { First, All };
ExampleMode parse_example_mode(const std::string& text);  // first | all

struct EvalOptions {
  bool by_family = false;  // group by GPU and model (the workload's model token) too
  ExampleMode examples = ExampleMode::First;
  // Called for a case a predictor could not answer (no profile, a refused LLM answer).
  std::function<void(const std::string& line)> on_skip;
};

struct EvalRow {
  std::string gpu;
  std::string group;  // the model family with by_family, else empty
  std::string predictor;
  size_t n = 0;           // predictions scored
  size_t unanswered = 0;  // cases the predictor gave no power for
  std::optional<double> mape_power_pct;
  std::optional<Interval> mape_ci_pct;    // 95% percentile bootstrap over the cases
  std::optional<double> regime_accuracy;  // 0..1 over the cases where both regimes are known
  size_t regime_n = 0;
};

// `predictor` is asked for every case of every group; a one-shot predictor (needs_example) gets
// the group's first case as its example (scored on the others), or each case in turn (All).
// Groups in the order of their first case.
std::vector<EvalRow> evaluate(Predictor& predictor, const std::vector<MeasuredCase>& cases,
                              const EvalOptions& options = {});

// One predictor over its scored rows grouped by family: how many, the median and the worst MAPE
// (and where), and how many are over `goal_pct`. Predictors in the order of their first row.
inline constexpr double kFamilyGoalPct = 15;  // issue goal: one-shot power error per GPU x family
struct FamilySummary {
  std::string predictor;
  size_t groups = 0;  // GPU x family rows with a score
  double median_pct = 0;
  double worst_pct = 0;
  std::string worst_gpu, worst_family;
  size_t over_goal = 0;
  double goal_pct = kFamilyGoalPct;
};
std::vector<FamilySummary> summarize_families(const std::vector<EvalRow>& rows,
                                              double goal_pct = kFamilyGoalPct);

}  // namespace regime::predict
