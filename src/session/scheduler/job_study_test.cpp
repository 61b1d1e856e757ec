// A scheduler job's study (--gpu-power=study, session/scheduler/job_study.hpp) on a simulated H200:
// which jobs it studies, and a job that sends no step markers, which it leaves as it is, saying why
// in the job's record. A job on several nodes: which node leads, and what a follower does with the
// leader's decision in a real server store (a MariaDB on loopback) or without one.
#include "session/scheduler/job_study.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "device/registry.hpp"
#include "mariadb/test_server.hpp"
#include "run/step_marker.hpp"
#include "session/scheduler/job_leader.hpp"
#include "store/job_store.hpp"
#include "support/temp_dir.hpp"

namespace regime::session {
namespace {

namespace fs = std::filesystem;

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
  r.db = DatabaseLocation::from_text((dir / "jobs.sqlite").string());
  r.step_socket = (dir / "sock" / "steps.sock").string();
  r.probe_seconds = 0.3;
  return r;
}

TEST(JobStudy, OnlyARunningJobWithTheStudyPolicyIsStudied) {
  const test::TempDir dir("regime-job-study-refused");
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
  const test::TempDir dir("regime-job-study-no-markers");
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

// Sends a step marker every `step_s` for `seconds` to the study's socket; returns how many.
int send_steps(const std::string& socket_path, double seconds, double step_s) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::snprintf(to.sun_path, sizeof(to.sun_path), "%s", socket_path.c_str());
  int sent = 0;
  const auto wall_s = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const double until_s = wall_s() + seconds;
  while (wall_s() < until_s) {
    const double a = wall_s();
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(step_s * 1e6)));
    const std::string d = format_step_datagram(Step{sent, a, wall_s()});
    if (::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) >=
        0)
      ++sent;
  }
  ::close(fd);
  return sent;
}

TEST(JobStudy, TheLeaderRunsOnToTheJobsEndAndKeepsTheWholeJobsFigures) {
  const test::TempDir dir("regime-job-study-whole");
  JobStudyRequest r = study_request(dir);
  r.probe_seconds = 1;
  JobStore(r.db).put({r.job_id, r.node, "running", job_record("study")});
  // The study in a child of its own: the epilog's SIGTERM ends it, as it ends a job's study.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      study_job(r);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  for (int i = 0; i < 200 && !fs::exists(r.step_socket); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int sent = send_steps(r.step_socket, 3, 0.02);
  ::kill(child, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const auto row = JobStore(r.db).get(r.job_id, r.node);
  ASSERT_TRUE(row.has_value());
  const nlohmann::json& rec = row->record;
  EXPECT_NE(rec["study"]["outcome"], "running") << rec.dump(2);
  ASSERT_TRUE(rec.contains("job")) << rec.dump(2);
  const nlohmann::json& job = rec["job"];
  const int steps = job["steps"];
  EXPECT_GT(steps, sent / 2) << job.dump(2);
  EXPECT_LE(steps, sent);
  int parts = job["probe"]["steps"].get<int>();
  for (const char* part : {"profiling", "decided"})
    if (job[part].is_object()) parts += job[part]["steps"].get<int>();
  EXPECT_EQ(parts, steps) << job.dump(2);
  EXPECT_GT(job["seconds"].get<double>(), 1.0);
  // A simulated card's counter does not run on the wall clock: without energy, no saving.
  if (job["energy_J"].get<double>() > 0)
    EXPECT_TRUE(job["saved_against"] == "default 700 W") << job.dump(2);
  else
    EXPECT_TRUE(job["saved_J"].is_null()) << job.dump(2);
}

TEST(JobLeader, SlurmsNodeListExpandsInItsOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_hostlist("n[1-2]"), (V{"n1", "n2"}));
  EXPECT_EQ(expand_hostlist("n2,n1"), (V{"n2", "n1"}));
  EXPECT_EQ(expand_hostlist("gpu[08-10,3],login1"),
            (V{"gpu08", "gpu09", "gpu10", "gpu3", "login1"}));
  EXPECT_EQ(expand_hostlist("r[1-2]-ib[5,7]"), (V{"r1-ib5", "r1-ib7", "r2-ib5", "r2-ib7"}));
  EXPECT_EQ(expand_hostlist(""), V{});
  for (const char* bad : {"n[1-", "n[3-1]", "n[]", "n1,,n2", "n[1,x]", "n1]", "n 1"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << bad << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::string("node list '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(JobLeader, TheFirstNodeOfAJobOfSeveralLeadsAndAJobOfOneHasNoLeader) {
  EXPECT_EQ(study_leader(expand_hostlist("n[3-4],n1")), "n3");
  EXPECT_EQ(study_leader({"n1"}), "");
  EXPECT_EQ(study_leader({}), "");
}

JobRow leader_row(const std::string& status, const nlohmann::json& study) {
  nlohmann::json record = job_record("study");
  if (!study.is_null()) record["study"] = study;
  return {"42", "n1", status, record};
}

TEST(JobLeader, TheNodeListIsSlurmsJobNodeListElseTheOneSlurm2205sPrologHas) {
  ::unsetenv("SLURM_JOB_NODELIST");
  ::setenv("SLURM_NODELIST", "n[1-2]", 1);
  EXPECT_EQ(slurm_job_nodelist(), "n[1-2]");
  ::setenv("SLURM_JOB_NODELIST", "m[3-4]", 1);
  EXPECT_EQ(slurm_job_nodelist(), "m[3-4]");
  ::unsetenv("SLURM_JOB_NODELIST");
  ::unsetenv("SLURM_NODELIST");
  EXPECT_EQ(slurm_job_nodelist(), "");
}

TEST(JobLeader, AFollowerWaitsWhileTheLeaderStudiesAndTakesOnlyADecidedCap) {
  using Act = LeaderDecision::Act;
  EXPECT_EQ(read_leader_decision(std::nullopt, "n1").act, Act::Wait);
  EXPECT_EQ(
      read_leader_decision(leader_row("running", {{"outcome", "running"}, {"cap_W", 210}}), "n1")
          .act,
      Act::Wait);  // a cap of the sweep is no decision
  const LeaderDecision decided = read_leader_decision(
      leader_row("running",
                 {{"outcome", "decided"}, {"cap_W", 300}, {"sweep_id", 7}, {"why", "w"}}),
      "n1");
  EXPECT_EQ(decided.act, Act::Apply);
  EXPECT_EQ(decided.cap_W, 300);
  EXPECT_EQ(decided.sweep_id, 7);
  EXPECT_EQ(decided.why, "the leader n1 decided 300 W (w)");
  const LeaderDecision keep = read_leader_decision(
      leader_row("running", {{"outcome", "keep_default"}, {"cap_W", nullptr}}), "n1");
  EXPECT_EQ(keep.act, Act::Keep);
  EXPECT_EQ(keep.outcome, "keep_default");
  const LeaderDecision none = read_leader_decision(
      leader_row("running", {{"outcome", "no_step_markers"}, {"why", "no markers"}}), "n1");
  EXPECT_EQ(none.act, Act::Keep);
  EXPECT_EQ(none.outcome, "leader_undecided");
  EXPECT_EQ(
      none.why,
      "the leader n1's study ended no_step_markers (no markers); the limits stay as they are");
  const LeaderDecision ended = read_leader_decision(leader_row("done", nullptr), "n1");
  EXPECT_EQ(ended.act, Act::Keep);
  EXPECT_EQ(ended.why, "the job ended on the leader n1 before its study decided");
}

TEST(JobLeader, AHostileLeaderRowKeepsTheLimitsAndSaysWhy) {
  using Act = LeaderDecision::Act;
  const std::vector<nlohmann::json> hostile = {
      {{"outcome", "decided"}, {"cap_W", "300"}},
      {{"outcome", "decided"}, {"cap_W", nullptr}},
      {{"outcome", "decided"}},
      {{"outcome", 5}, {"cap_W", 300}},
      {{"outcome", "decided"}, {"cap_W", 300}, {"why", {"w"}}},
  };
  for (const nlohmann::json& study : hostile) {
    LeaderDecision d;
    ASSERT_NO_THROW(d = read_leader_decision(leader_row("running", study), "n1")) << study.dump();
    EXPECT_EQ(d.act, Act::Keep) << study.dump();
    EXPECT_EQ(d.outcome, "leader_unusable") << study.dump();
    EXPECT_NE(d.why.find("the leader n1's row is unusable"), std::string::npos) << d.why;
    EXPECT_FALSE(d.cap_W) << study.dump();
  }
  // A record that is not an object at all reads as a study not begun.
  const LeaderDecision odd = read_leader_decision(JobRow{"42", "n1", "done", "text"}, "n1");
  EXPECT_EQ(odd.act, Act::Keep);
}

TEST(JobLeader, ACapOutsideAnyOfTheNodesGpusIsRefusedForAll) {
  const GpuInfo h200 = open_device("sim:h200")->info();
  EXPECT_FALSE(refuse_cap({h200, h200}, 300).has_value());
  const auto refused = refuse_cap({h200, h200}, h200.max_limit_W + 100);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("outside the range of sim:h200"), std::string::npos) << *refused;
}

// The follower's row: the job on n2, led by n1.
nlohmann::json follower_record() {
  nlohmann::json record = job_record("study");
  record["study_leader"] = "n1";
  record["study_nodes"] = 2;
  return record;
}

TEST(JobStudy, AFollowerWithItsOwnFileStoreKeepsItsLimitsAndSaysWhy) {
  const test::TempDir dir("regime-job-study-follower-file");
  JobStudyRequest r = study_request(dir);
  r.node = "n2";
  JobStore store(r.db);
  store.put({r.job_id, r.node, "running", follower_record()});
  const nlohmann::json study = study_job(r);
  EXPECT_EQ(study["outcome"], "no_shared_store") << study.dump(2);
  EXPECT_EQ(study["leader"], "n1");
  EXPECT_NE(study["why"].get<std::string>().find("cannot reach this node's own run store"),
            std::string::npos);
  EXPECT_FALSE(store.get(r.job_id, r.node)->record["gpus"][0].contains("enforced_W"));
}

// Two nodes of one job on one server store: the leader's row as its study writes it, the
// follower's study in this process.
class JobStudyFollower : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.start(dir_ / "server");
    r_ = study_request(dir_);
    r_.node = "n2";
    r_.db = DatabaseLocation::from_text(server_.uri());
    r_.leader_wait_s = 20;
    r_.leader_poll_s = 0.05;
    JobStore store(r_.db);
    store.put({r_.job_id, "n2", "running", follower_record()});
    store.put({r_.job_id, "n1", "running", leader_row("running", {{"outcome", "running"}}).record});
  }
  void TearDown() override { server_.stop(); }
  // The leader's study ends with `study` after `after_s`, while the follower waits.
  nlohmann::json follow_while_the_leader_writes(const nlohmann::json& study, double after_s) {
    std::thread leader([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(after_s * 1e3)));
      JobStore store(r_.db);
      store.put({r_.job_id, "n1", "running", leader_row("running", study).record});
    });
    const nlohmann::json out = study_job(r_);
    leader.join();
    return out;
  }
  // One folder per test: ctest runs them side by side, each with its own server.
  test::TempDir tmp_{"regime-job-study"};
  const fs::path dir_ = tmp_.path;
  testing::MariaDbTestServer server_;
  JobStudyRequest r_;
};

TEST_F(JobStudyFollower, AFollowerWaitsForTheLeadersDecisionAndSetsThatCapOnItsGpus) {
  const nlohmann::json study = follow_while_the_leader_writes(
      {{"outcome", "decided"}, {"cap_W", 300}, {"sweep_id", 3}, {"why", "sweep:3 over 6 caps"}},
      0.5);
  EXPECT_EQ(study["outcome"], "decided") << study.dump(2);
  EXPECT_EQ(study["cap_W"], 300);
  EXPECT_EQ(study["sweep_id"], 3);
  EXPECT_EQ(study["why"], "the leader n1 decided 300 W (sweep:3 over 6 caps)");
  const auto row = JobStore(r_.db).get(r_.job_id, "n2");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->record["gpus"][0]["enforced_W"], 300);  // set through JobCaps
  EXPECT_EQ(row->record["study"], study);
}

TEST_F(JobStudyFollower, ACapTheFollowersGpusCannotTakeLeavesTheirLimits) {
  const nlohmann::json study =
      follow_while_the_leader_writes({{"outcome", "decided"}, {"cap_W", 5000}}, 0.1);
  EXPECT_EQ(study["outcome"], "cap_refused") << study.dump(2);
  EXPECT_NE(study["why"].get<std::string>().find("outside the range of sim:h200"),
            std::string::npos);
  EXPECT_FALSE(JobStore(r_.db).get(r_.job_id, "n2")->record["gpus"][0].contains("enforced_W"));
}

TEST_F(JobStudyFollower, AFollowerWhoseLeaderNeverDecidesKeepsItsLimitsAfterTheBoundedWait) {
  r_.leader_wait_s = 0.5;
  const nlohmann::json study = study_job(r_);
  EXPECT_EQ(study["outcome"], "leader_timeout") << study.dump(2);
  EXPECT_EQ(study["why"],
            "no decision from the leader n1 in 0.5 s (the study on n1 is running); the limits stay "
            "as they are");
  EXPECT_FALSE(JobStore(r_.db).get(r_.job_id, "n2")->record["gpus"][0].contains("enforced_W"));
}

}  // namespace
}  // namespace regime::session
