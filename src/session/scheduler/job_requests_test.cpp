#include "session/scheduler/job_requests.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "store/job_store.hpp"
#include "store/run_store.hpp"
#include "support/temp_dir.hpp"

namespace regime::session {
namespace {

namespace fs = std::filesystem;

TEST(JobRequests, TheNodeIsSlurmsNameElseTheHostName) {
  const char* before = getenv("SLURMD_NODENAME");
  const std::string saved = before ? before : "";
  setenv("SLURMD_NODENAME", "gpu-node-7", 1);
  EXPECT_EQ(this_node(), "gpu-node-7");
  setenv("SLURMD_NODENAME", "", 1);
  EXPECT_FALSE(this_node().empty());
  EXPECT_NE(this_node(), "gpu-node-7");
  if (before)
    setenv("SLURMD_NODENAME", saved.c_str(), 1);
  else
    unsetenv("SLURMD_NODENAME");
}

TEST(JobRequests, TheRunStoreIsTheOneNamedElseTheDefault) {
  EXPECT_EQ(job_db(DatabaseLocation::from_text("/tmp/x.sqlite")).path(), fs::path("/tmp/x.sqlite"));
  EXPECT_EQ(job_db(DatabaseLocation()).path(), RunStore::default_path());
}

TEST(JobRequests, ShowListsEveryNodesRowOfTheJob) {
  const test::TempDir tmp("regime-job-requests-show");
  const fs::path db = tmp / "runs.sqlite";
  {
    JobStore store(db);
    store.put({"42", "b", "done", {{"energy_J", 10.0}}});
    store.put({"42", "a", "running", nlohmann::json::object()});
    store.put({"43", "a", "running", nlohmann::json::object()});
  }
  const nlohmann::json shown = show_job("42", DatabaseLocation::from_text(db.string()));
  EXPECT_EQ(shown["db"], db.string());
  EXPECT_EQ(shown["job_id"], "42");
  ASSERT_EQ(shown["nodes"].size(), 2u);
  EXPECT_EQ(shown["nodes"][0]["node"], "a");
  EXPECT_EQ(shown["nodes"][1]["status"], "done");
  EXPECT_EQ(shown["nodes"][1]["record"]["energy_J"], 10.0);
  fs::remove_all(db.parent_path());
}

TEST(JobRequests, EndingAJobNothingWasRecordedForIsNullWithoutAComment) {
  const test::TempDir tmp("regime-job-requests-end");
  const fs::path db = tmp / "runs.sqlite";
  const JobEnd e = end_job_merging("404", "node1", {DatabaseLocation::from_text(db.string()), ""},
                                   "regime gpu_energy_j=5 gpus=1");
  EXPECT_EQ(e.db.path(), db);
  EXPECT_TRUE(e.record.is_null());
  EXPECT_TRUE(e.admin_comment.empty());
  fs::remove_all(db.parent_path());
}

}  // namespace
}  // namespace regime::session
