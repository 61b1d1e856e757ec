// The job journal (the jobs a node began and has not ended) and the restore at boot, which ends the
// records of jobs begun in an earlier boot.
#include "session/scheduler/job_journal.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/paths.hpp"
#include "session/scheduler/job.hpp"
#include "store/job_store.hpp"
#include "support/temp_dir.hpp"
#include "support/test_user.hpp"

namespace regime::session {
namespace {

namespace fs = std::filesystem;

// A private system state directory and boot id file for one test.
class JobJournalTest : public ::testing::Test {
 protected:
  void SetUp() override { boot("boot-1"); }
  void boot(const std::string& id) { std::ofstream(dir_ / "boot_id") << id << "\n"; }
  test::TempDir tmp_{"regime-job-journal"};
  const fs::path dir_ = tmp_.path;
  testing::ScopedEnv env_{{{"REGIME_SYSTEM_STATE_DIR", (dir_ / "system").string()},
                           {"REGIME_BOOT_ID_FILE", (dir_ / "boot_id").string()}}};
};

TEST_F(JobJournalTest, EntriesAreKeptPerJobAndNodeUntilRemoved) {
  EXPECT_EQ(current_boot_id(), "boot-1");
  EXPECT_EQ(job_journal_dir(), dir_ / "system" / "jobs");
  EXPECT_TRUE(job_entries().empty());
  const DatabaseLocation db = DatabaseLocation::from_text((dir_ / "runs.sqlite").string());
  put_job_entry({"12", "n1", db, "boot-1", 100, 0, 0});
  put_job_entry({"12", "n/2", db, "boot-1", 101, 4242, 77});
  auto e = get_job_entry("12", "n/2");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->db.path(), dir_ / "runs.sqlite");
  EXPECT_EQ(e->study_pid, 4242);
  EXPECT_EQ(e->study_start_ticks, 77u);
  ASSERT_EQ(job_entries().size(), 2u);
  remove_job_entry("12", "n1");
  ASSERT_EQ(job_entries().size(), 1u);
  EXPECT_EQ(job_entries()[0].node, "n/2");
}

TEST_F(JobJournalTest, TheRestoreAtBootEndsOnlyJobsOfAnEarlierBoot) {
  const fs::path db = dir_ / "runs.sqlite";
  nlohmann::json capped = {{"node", "n1"},        {"policy", "300"},
                           {"refused", nullptr},  {"started_at_unix_s", 100.0},
                           {"boot_id", "boot-1"}, {"gpus", nlohmann::json::array()}};
  {
    JobStore store(db);
    store.put({"7", "n1", "running", capped});
    put_job_entry({"7", "n1", DatabaseLocation::from_text(db.string()), "boot-1", 100, 0, 0});
  }
  // Same boot: the job is alive and is left alone.
  EXPECT_TRUE(end_jobs_of_earlier_boots(false).empty());
  EXPECT_EQ(JobStore(db).get("7", "n1")->status, "running");
  boot("boot-2");
  auto listed = end_jobs_of_earlier_boots(true);  // a dry run changes nothing
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].record.is_null());
  EXPECT_EQ(JobStore(db).get("7", "n1")->status, "running");
  auto ended = end_jobs_of_earlier_boots(false);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].error, "");
  auto row = JobStore(db).get("7", "n1");
  EXPECT_EQ(row->status, "done");
  EXPECT_EQ(row->record.at("rebooted"), true);
  EXPECT_TRUE(row->record.at("energy_J").is_null());
  EXPECT_TRUE(job_entries().empty());
  EXPECT_EQ(admin_comment(row->record),
            "regime gpu_energy_j=unknown gpus=0 power=300 nodes=n1:0:unknown");
  // The epilog that comes after (slurmd back) finds it done and changes nothing.
  EXPECT_EQ(end_job("7", "n1", {DatabaseLocation::from_text(db.string()), ""}).at("rebooted"),
            true);
}

}  // namespace
}  // namespace regime::session
