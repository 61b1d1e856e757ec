// One decision, every view, on every simulated GPU: a sweep's and a study's headline, table,
// interval line and JSON print the same cap and the same changes, and deciding the sweep again
// from its own --table-out (`regime recommend --sweep`) or from the run database (`regime
// recommend --run sweep:ID`) gives the same cap and the same changes.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cli/settings_options.hpp"
#include "present/render.hpp"
#include "report/sweep.hpp"
#include "session/results/runs.hpp"
#include "session/study/study.hpp"
#include "session/study/study_view.hpp"
#include "session/sweep/sweep.hpp"
#include "session/sweep/sweep_view.hpp"
#include "support/text_table.hpp"
#include "twin/spec.hpp"

namespace regime::session {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::vector<std::string> kWorkloads = {"sim:resnet50", "sim:vgg16"};

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / fmt::format("regime-views-{}", getpid());
  fs::create_directories(dir);
  return dir;
}

std::string pct1(double v) { return fmt::format("{:+.1f}", v); }

// The text views and the JSON against the view.
void expect_views_agree(const plan::Decision& d, const plan::DecisionView& v,
                        const std::vector<plan::ProbeResult>& probes,
                        const std::optional<plan::ProbeResult>& again, const nlohmann::json& json,
                        const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(v.cap_W, d.cap_W);
  EXPECT_EQ(v.keep_default, d.keep_default);
  EXPECT_EQ(json["cap_W"].get<double>(), v.cap_W);
  EXPECT_EQ(json["keep_default"].get<bool>(), v.keep_default);
  EXPECT_EQ(json["energy_change_pct"].get<double>(), v.energy_change_pct);
  EXPECT_EQ(json["time_change_pct"].get<double>(), v.time_change_pct);
  EXPECT_EQ(json["only_point_estimate_meets_time_bound"].get<bool>(),
            v.only_point_meets_time_bound);
  if (v.time_change_ci_pct) {
    EXPECT_EQ(json["time_change_ci_pct"][1].get<double>(), v.time_change_ci_pct->second);
  }
  const std::string text = plan::decision_text(d, v);
  if (v.keep_default) {
    EXPECT_THAT(text, HasSubstr(fmt::format("keep the default limit {} W", v.cap_W)));
    return;
  }
  EXPECT_THAT(text, HasSubstr(fmt::format("decision: {} W (energy per {} {}%, time per {} {}%)",
                                          v.cap_W, v.unit, pct1(v.energy_change_pct), v.unit,
                                          pct1(v.time_change_pct))));
  if (v.energy_change_ci_pct) {
    EXPECT_THAT(text, HasSubstr("change: " + plan::interval_line(v)));
  }
  if (v.only_point_meets_time_bound) {
    EXPECT_THAT(text, HasSubstr("only the point estimate"));
  }
  const std::string table = plan::results_table(probes, v, again);
  const auto row = test::row_cells(table, fmt::format("{:.1f}", v.cap_W));
  ASSERT_GE(row.size(), 4u) << table;
  EXPECT_EQ(row[row.size() - 3], pct1(v.energy_change_pct)) << table;
  EXPECT_EQ(row[row.size() - 2], pct1(v.time_change_pct)) << table;
}

// Deciding again gives the same decision, with the same figures.
void expect_same_decision(const TableDecision& again, const plan::DecisionView& live,
                          const std::string& what) {
  SCOPED_TRACE(what);
  const plan::DecisionView& v = again.view;
  EXPECT_EQ(v.cap_W, live.cap_W) << again.recommendation.decision.reason;
  EXPECT_EQ(v.keep_default, live.keep_default);
  EXPECT_NEAR(v.energy_change_pct, live.energy_change_pct, 1e-9);
  EXPECT_NEAR(v.time_change_pct, live.time_change_pct, 1e-9);
  EXPECT_EQ(v.energy_change_ci_pct.has_value(), live.energy_change_ci_pct.has_value());
  if (v.energy_change_ci_pct && live.energy_change_ci_pct) {
    EXPECT_NEAR(v.energy_change_ci_pct->first, live.energy_change_ci_pct->first, 1e-9);
    EXPECT_NEAR(v.energy_change_ci_pct->second, live.energy_change_ci_pct->second, 1e-9);
  }
  if (v.time_change_ci_pct && live.time_change_ci_pct) {
    EXPECT_NEAR(v.time_change_ci_pct->second, live.time_change_ci_pct->second, 1e-9);
  }
  EXPECT_EQ(v.only_point_meets_time_bound, live.only_point_meets_time_bound);
}

TEST(SweepViews, EveryViewOfASweepAgreesOnEverySimulatedGpu) {
  const fs::path dir = scratch();
  const DatabaseLocation db = DatabaseLocation::from_text((dir / "sweeps.sqlite").string());
  size_t capped = 0;
  for (const auto& model : twin::gpu_models())
    for (const auto& workload : kWorkloads) {
      const std::string what = fmt::format("sim:{} {}", model, workload);
      SweepRequest r;
      r.device = cli::parse_device_set("sim:" + model);
      r.workload.builtin = workload;
      r.settings.db = db;
      r.table_out = (dir / (model + ".csv")).string();
      const SweepReport rep = run_sweep(r);
      const plan::DecisionView v = decision_view(rep);
      capped += v.keep_default ? 0 : 1;
      expect_views_agree(rep.outcome.decision, v, rep.outcome.probes, rep.outcome.default_again,
                         to_json(rep)["decision"], what);
      const auto from_table = decide_table(read_sweep_table(r.table_out), rep.objective);
      ASSERT_EQ(from_table.size(), 1u);
      expect_same_decision(from_table.front(), v, what + ", recommend --sweep");
      ASSERT_TRUE(rep.stored_id.has_value());
      const Redecision kept = decide_again(db, *rep.stored_id, rep.objective);
      expect_same_decision(kept.decided, v, what + ", recommend --run");
    }
  // Most pairs choose a cap, so the views' figures and intervals are compared, not only zeros.
  EXPECT_GE(capped, twin::gpu_models().size());
}

TEST(SweepViews, EveryViewOfAStudyAgreesOnEverySimulatedGpu) {
  const fs::path dir = scratch();
  const DatabaseLocation db = DatabaseLocation::from_text((dir / "studies.sqlite").string());
  size_t swept = 0;
  for (const auto& model : twin::gpu_models())
    for (const auto& workload : kWorkloads) {
      const std::string what = fmt::format("study sim:{} {}", model, workload);
      StudyRequest r;
      r.device = cli::parse_device_set("sim:" + model);
      r.workload.builtin = workload;
      r.settings.db = db;
      r.control = false;
      const StudyReport rep = run_study(r);
      if (!rep.sweep) continue;  // the regime warranted no sweep: no decision to show
      ++swept;
      const plan::DecisionView v = decision_view(*rep.sweep);
      const auto& o = rep.sweep->outcome;
      const nlohmann::json json = rep.json["decision"];
      expect_views_agree(o.decision, v, o.probes, o.default_again, json, what);
      // The report page shows the same decision.
      EXPECT_EQ(report::sweep_section(o.probes, o.decision, v)["decision"], json) << what;
      // The study's table of several GPUs compares each cap with the same level.
      const StudyRow row = study_row(rep);
      for (const auto& [cap, pct] : row.energy_vs_default_pct)
        if (!v.keep_default && cap == v.cap_W) {
          EXPECT_EQ(pct, v.energy_change_pct) << what;
        }
      ASSERT_TRUE(rep.sweep->stored_id.has_value());
      const Redecision kept = decide_again(db, *rep.sweep->stored_id, rep.sweep->objective);
      expect_same_decision(kept.decided, v, what + ", recommend --run");
    }
  // Every simulated GPU's pairs are cap-bound or have headroom: each study sweeps.
  EXPECT_EQ(swept, twin::gpu_models().size() * kWorkloads.size());
}

}  // namespace
}  // namespace regime::session
