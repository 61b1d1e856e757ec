#include "session/results/recommend.hpp"

#include <gtest/gtest.h>

#include "cli/run_options.hpp"
#include "common/error.hpp"
#include "session/results/recommend_view.hpp"

namespace regime::session {
namespace {

const std::string kTable = std::string(REGIME_TEST_DATA_DIR) + "/zeus/V100.sweep.csv";

// The request as the CLI builds it from the options' text, then recommended: the kind of the
// Error either step throws.
ErrorKind kind_of(std::string sweep_file, std::string run, std::string objective = "") {
  try {
    RecommendRequest r;
    r.sweep_file = std::move(sweep_file);
    if (!run.empty()) r.run = cli::parse_run_ref(run);
    if (!objective.empty()) r.objective = plan::parse_objective(objective);
    recommend(r);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::Internal;  // no error: the caller's expectation fails
}

TEST(Recommend, ATableIsDecidedPerWorkloadUnderTheObjective) {
  RecommendRequest r;
  r.sweep_file = kTable;
  r.objective = plan::parse_objective("energy");
  const RecommendReport report = recommend(r);
  EXPECT_EQ(report.source, kTable);
  EXPECT_EQ(report.objective, "energy");
  EXPECT_EQ(report.decided.size(), 68u);  // the table's workloads
  const nlohmann::json j = to_json(report);
  ASSERT_EQ(j["workloads"].size(), report.decided.size());
  EXPECT_EQ(j["workloads"][0]["workload"], report.decided[0].recommendation.workload);
  EXPECT_EQ(j["workloads"][0]["gpu"], "V100");
  EXPECT_TRUE(j["workloads"][0]["decision"].contains("keep_default"));
}

TEST(Recommend, NeedsATableOrAKeptSweepAndAReadableObjective) {
  EXPECT_EQ(kind_of("", ""), ErrorKind::InvalidArgument);  // neither
  EXPECT_EQ(kind_of(kTable, "sweep:1"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind_of("", "probe:1"), ErrorKind::InvalidArgument);  // not a sweep
  EXPECT_EQ(kind_of(kTable, "", "fastest"), ErrorKind::InvalidArgument);
}

}  // namespace
}  // namespace regime::session
