#include "session/node/restore.hpp"

#include <gtest/gtest.h>

#include "session/node/restore_view.hpp"

namespace regime::session {
namespace {

RestoreOutcome gpu(bool ok, bool dry_run, std::string error = "") {
  return {"nvml:0", "GPU-1", 700, ok, std::move(error), dry_run};
}

RestoreReport report(std::vector<RestoreOutcome> gpus, std::vector<StaleJob> jobs = {}) {
  return {"/state/journal", "/state/jobs", false, std::move(gpus), std::move(jobs)};
}

TEST(RestoreReport, AllRestoredIsSilentAndExitsZero) {
  const RestoreReport r = report({gpu(true, false), gpu(true, false)});
  EXPECT_TRUE(restore_warnings(r).empty());
  EXPECT_EQ(restore_exit_status(r), 0);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["failed"], 0);
  ASSERT_EQ(j["outcomes"].size(), 2u);
  EXPECT_TRUE(j["outcomes"][0]["error"].is_null());
  EXPECT_EQ(j["journal"], "/state/journal");
}

TEST(RestoreReport, AFailedGpuIsCountedNamedAndExitsOneOverReadOnly) {
  RestoreReport r = report({gpu(false, false, "GPU is lost"), gpu(false, true)});
  EXPECT_EQ(to_json(r)["failed"], 1);
  EXPECT_EQ(to_json(r)["outcomes"][0]["error"], "GPU is lost");
  EXPECT_EQ(restore_exit_status(r), 1);
  const auto w = restore_warnings(r);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0],
            "read-only: REGIME_READ_ONLY is set: nothing was changed; unset it to restore the 1 "
            "GPU(s) above");
  EXPECT_EQ(w[1],
            "1 of 2 GPU(s) could not be restored; they stay in /state/journal for the next try");
}

TEST(RestoreReport, ReadOnlyExitsFourAndAJobNotEndedOne) {
  EXPECT_EQ(restore_exit_status(report({gpu(false, true)})), 4);
  StaleJob ended{"7", "node1", DatabaseLocation::from_text("/db"), {{"job_id", "7"}}, ""};
  StaleJob stuck{"8", "node1", DatabaseLocation::from_text("/db"), nullptr, "database is locked"};
  const RestoreReport r = report({}, {ended, stuck});
  EXPECT_EQ(restore_exit_status(r), 1);
  ASSERT_EQ(restore_warnings(r).size(), 1u);
  EXPECT_EQ(restore_warnings(r)[0],
            "1 job(s) of an earlier boot could not be ended; they stay in /state/jobs");
  const nlohmann::json jobs = to_json(r)["jobs_of_earlier_boots"];
  EXPECT_EQ(jobs[0]["ended"], true);
  EXPECT_EQ(jobs[1]["ended"], false);
  EXPECT_EQ(jobs[1]["error"], "database is locked");
}

}  // namespace
}  // namespace regime::session
