// A scheduler job's study (--gpu-power=study, session/job_study.hpp) on a simulated H200: which
// jobs it studies, and a job that sends no step markers, which it leaves as it is, saying why in
// the job's record.
#include "session/job_study.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "device/registry.hpp"
#include "store/job_store.hpp"

namespace regime::session {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("regime-job-study-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A job on one simulated H200, as `job begin` records it.
nlohmann::json job_record(const std::string& policy) {
  const GpuPtr gpu = open_device("sim:h200");
  return {{"policy", policy},
          {"workload", "train"},
          {"gpus", {{{"device", "sim:h200"}, {"uuid", gpu->info().uuid}, {"index", 0}}}}};
}

JobStudyRequest study_request(const fs::path& dir) {
  JobStudyRequest r;
  r.job_id = "42";
  r.node = "n1";
  r.db = dir / "jobs.sqlite";
  r.step_socket = (dir / "sock" / "steps.sock").string();
  r.probe_seconds = 0.3;
  return r;
}

TEST(JobStudy, OnlyARunningJobWithTheStudyPolicyIsStudied) {
  const fs::path dir = temp_dir("refused");
  const JobStudyRequest r = study_request(dir);
  JobStore store(r.db);
  try {
    study_job(r);
    ADD_FAILURE() << "a job without a record was studied";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
    EXPECT_NE(std::string(e.what()).find("job 42 on n1 is not running with --gpu-power=study"),
              std::string::npos)
        << e.what();
  }
  store.put({r.job_id, r.node, "running", job_record("auto")});
  EXPECT_THROW(study_job(r), Error);
  store.put({r.job_id, r.node, "done", job_record("study")});
  EXPECT_THROW(study_job(r), Error);
}

TEST(JobStudy, AJobWithoutStepMarkersIsLeftAsItIsAndItsRecordSaysWhy) {
  const fs::path dir = temp_dir("no-markers");
  const JobStudyRequest r = study_request(dir);
  JobStore store(r.db);
  store.put({r.job_id, r.node, "running", job_record("study")});
  const nlohmann::json study = study_job(r);
  EXPECT_EQ(study["outcome"], "no_step_markers") << study.dump(2);
  EXPECT_EQ(study["steps"], 0);
  EXPECT_EQ(study["step_socket"], r.step_socket);
  const std::string why = study["why"];
  EXPECT_EQ(why.rfind("no step markers arrived in the first 0.3 s", 0), 0u) << why;
  EXPECT_FALSE(study.contains("regime"));  // nothing was measured, so nothing was classified
  const auto row = store.get(r.job_id, r.node);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->status, "running");  // the epilog ends the job, not the study
  EXPECT_EQ(row->record["study"], study);
  EXPECT_FALSE(row->record["gpus"][0].contains("enforced_W"));  // no cap was set
  EXPECT_FALSE(fs::exists(r.step_socket));                      // the socket is gone
}

}  // namespace
}  // namespace regime::session
