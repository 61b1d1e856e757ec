// The runs presenters: the text and the JSON of one listing show the same results.
#include "session/results/runs_view.hpp"

#include <gtest/gtest.h>

#include "support/run_records.hpp"

namespace regime::session {
namespace {

RunsListing listing() {
  RunsListing l;
  l.location = "runs.sqlite";
  RunRecord probe = testing::run_record(3, "sim:l4", "sim:resnet50");
  probe.started_at_utc = "2026-01-02T03:04:05Z";
  probe.regime = "thermal-bound";
  l.probes.push_back(probe);
  SweepRecord sweep = testing::sweep_record(2, "sim:l4", "sim:resnet50");
  sweep.decision = {{"keep_default", false}, {"cap_W", 62.5}, {"reason", "saves 4%"}};
  sweep.table_csv = "workload,gpu,cap_W\n";
  l.sweeps.push_back(sweep);
  return l;
}

TEST(RunsView, AListingShowsTheSameRegimeAndCapInBoth) {
  const RunsListing l = listing();
  const nlohmann::json j = to_json(l, {});
  const std::string text = to_text(l, {});
  EXPECT_EQ(j["probes"][0]["run"], "probe:3");
  EXPECT_EQ(j["probes"][0]["regime"], "thermal-bound");
  EXPECT_NE(text.find("  probe:3      2026-01-02T03:04:05Z  sim:l4     thermal-bound  done"),
            std::string::npos)
      << text;
  EXPECT_EQ(j["sweeps"][0]["decision"]["cap_W"], 62.5);
  EXPECT_NE(text.find("sim:l4     sweep          62.5 W        sim:resnet50"), std::string::npos)
      << text;
  EXPECT_EQ(text.rfind("runs.sqlite: 1 probe(s), 1 sweep(s),", 0), 0u) << text;
}

TEST(RunsView, OneResultShowsItsRecordsReasonInBoth) {
  const StoredResult sweep = listing().sweeps[0];
  EXPECT_EQ(to_json(sweep)["decision"]["reason"], "saves 4%");
  EXPECT_EQ(to_json(sweep)["table_csv"], "workload,gpu,cap_W\n");
  EXPECT_NE(to_text(sweep).find("decision: saves 4%\n"), std::string::npos) << to_text(sweep);
  const StoredResult probe = listing().probes[0];
  EXPECT_NE(to_text(probe).find("regime:          thermal-bound\n"), std::string::npos)
      << to_text(probe);
  EXPECT_EQ(to_json(probe)["regime"], "thermal-bound");
}

}  // namespace
}  // namespace regime::session
