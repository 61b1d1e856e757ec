// The run store on a MariaDB server: the URI and the credentials file, the schema, eight "nodes"
// writing at once, and what a node does while the server is down or stopped answering.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "common/error.hpp"
#include "mariadb/test_server.hpp"
#include "store/db_uri.hpp"
#include "store/job_store.hpp"
#include "store/run_store.hpp"
#include "support/cli_run.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(DbUri, ReadsUserHostPortDatabaseAndCredentials) {
  auto u = parse_db_uri("mariadb://regime@db.cluster:3307/regime?credentials=/etc/regime/n.cnf");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->user, "regime");
  EXPECT_EQ(u->host, "db.cluster");
  EXPECT_EQ(u->port, 3307);
  EXPECT_EQ(u->database, "regime");
  EXPECT_EQ(u->credentials, "/etc/regime/n.cnf");
  EXPECT_TRUE(u->credentials_named);
  EXPECT_EQ(u->display(), "mariadb://regime@db.cluster:3307/regime");
  auto d = parse_db_uri("mariadb://regime@db/runs");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, 3306);
  EXPECT_EQ(d->credentials, "/etc/regime/db.cnf");
  EXPECT_FALSE(d->credentials_named);
  EXPECT_FALSE(parse_db_uri("/var/lib/regime/runs.sqlite"));
  EXPECT_FALSE(parse_db_uri("runs.sqlite"));
}

TEST(DbUri, RefusesAPasswordAndMalformedUris) {
  auto refused = [](const std::string& uri) -> std::string {
    try {
      parse_db_uri(uri);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      return e.what();
    }
    return "";
  };
  const std::string with_password = refused("mariadb://regime:secret@db/regime");
  EXPECT_NE(with_password.find("password does not belong"), std::string::npos);
  EXPECT_NE(with_password.find("mariadb://regime:***@db/regime"), std::string::npos);
  EXPECT_EQ(with_password.find("secret"), std::string::npos) << with_password;
  EXPECT_NE(refused("mariadb://regime@db").find("no database"), std::string::npos);
  EXPECT_NE(refused("mariadb://regime@db:99999/regime").find("out of range"), std::string::npos);
  EXPECT_NE(refused("mariadb://db/regime").find("no user"), std::string::npos);
  EXPECT_NE(refused("mariadb://r@db/regime?password=x").find("unknown parameter password"),
            std::string::npos);
  // A secret put where it does not belong is not echoed either.
  const std::string in_query = refused("mariadb://r@db/regime?credentials=/c.cnf&password=SECRET");
  EXPECT_EQ(in_query.find("SECRET"), std::string::npos) << in_query;
  EXPECT_NE(in_query.find("?credentials=/c.cnf&password=***"), std::string::npos) << in_query;
  EXPECT_NE(refused("postgres://r@db/regime").find("unknown scheme postgres"), std::string::npos);
}

class CredentialsFile : public ::testing::Test {
 protected:
  test::TempDir tmp_{"regime-cred-test"};
  const fs::path dir_ = tmp_.path;
};

TEST_F(CredentialsFile, ReadsThePasswordOfAPrivateFileAndRefusesOneOthersCanRead) {
  const fs::path file = dir_ / "db.cnf";
  std::ofstream(file) << "# the run store's account\n[client]\nuser = ignored\n"
                      << "password = \"s3cret = yes\"\n";
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  DbUri u = *parse_db_uri("mariadb://regime@db/regime?credentials=" + file.string());
  EXPECT_EQ(read_db_password(u), "s3cret = yes");

  fs::permissions(file, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  try {
    read_db_password(u);
    FAIL() << "read a password others can read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoPermission);
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    EXPECT_NE(what.find("mode 0644"), std::string::npos) << what;
    EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
  }
  // A file the URI names must be there; the default one may be absent (no password).
  u.credentials = dir_ / "missing.cnf";
  EXPECT_THROW(read_db_password(u), Error);
  u.credentials_named = false;
  EXPECT_EQ(read_db_password(u), "");
}

// One server per test, in a temporary folder that is also the node's state folder.
class ServerStore : public ::testing::Test {
 protected:
  void SetUp() override {
    node_state("node0");
    server_.start(dir_ / "server");
  }
  void TearDown() override {
    server_.stop();
    ::unsetenv("REGIME_STATE_DIR");
  }
  // Makes `name` this process's node: its own state folder (queue and cache).
  fs::path node_state(const std::string& name) {
    const fs::path state = dir_ / name;
    fs::create_directories(state);
    fs::permissions(state, fs::perms::owner_all, fs::perm_options::replace);
    ::setenv("REGIME_STATE_DIR", state.c_str(), 1);
    return state;
  }
  size_t count(const std::string& sql) { return std::stoul(server_.admin("USE regime; " + sql)); }
  test::TempDir tmp_{"regime-server-test"};
  const fs::path dir_ = tmp_.path;
  testing::MariaDbTestServer server_;
};

TEST_F(ServerStore, CreatesTheSchemaOnceAndKeepsItsVersion) {
  int64_t id = 0;
  {
    RunStore store(server_.uri());
    EXPECT_FALSE(store.offline());
    EXPECT_EQ(store.path().string(),
              "mariadb://regime@127.0.0.1:" + std::to_string(server_.port()) + "/regime");
    RunRecord r;
    r.workload = "w";
    id = store.insert(r);
  }
  RunStore again(server_.uri());  // opened again: migrated once, nothing lost
  ASSERT_TRUE(again.get(id));
  EXPECT_EQ(again.get(id)->workload, "w");
  EXPECT_EQ(server_.admin("SELECT version FROM regime.regime_schema"),
            std::to_string(kRunStoreSchemaVersion) + "\n");
  EXPECT_EQ(count("SELECT COUNT(*) FROM regime_schema"), 1u);
  for (const char* t :
       {"runs", "sweeps", "decisions", "studies", "control_runs", "jobs", "llm_answers"})
    EXPECT_EQ(count(std::string("SELECT COUNT(*) FROM information_schema.tables WHERE "
                                "table_schema = 'regime' AND table_name = '") +
                    t + "'"),
              1u)
        << t;
}

TEST_F(ServerStore, KeepsJobsOfEveryNode) {
  JobStore jobs(server_.uri());
  jobs.put({"41", "n1", "running", {{"policy", "200"}}});
  jobs.put({"41", "n2", "running", {{"policy", "200"}}});
  jobs.put({"41", "n1", "done", {{"policy", "200"}, {"energy_J", 452.0}}});
  auto rows = jobs.rows("41");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].node, "n1");
  EXPECT_EQ(rows[0].status, "done");
  EXPECT_EQ(rows[0].record["energy_J"], 452.0);
  EXPECT_EQ(jobs.get("41", "n2")->status, "running");
  EXPECT_FALSE(jobs.get("41", "n3"));
}

TEST_F(ServerStore, AWrongPasswordIsAnErrorThatDoesNotShowIt) {
  const fs::path bad = dir_ / "bad.cnf";
  std::ofstream(bad) << "[client]\npassword=not-the-password\n";
  fs::permissions(bad, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  try {
    RunStore store("mariadb://regime@127.0.0.1:" + std::to_string(server_.port()) +
                   "/regime?credentials=" + bad.string());
    FAIL() << "connected with a wrong password";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(what.find("Access denied"), std::string::npos) << what;
    EXPECT_EQ(what.find("not-the-password"), std::string::npos) << what;
  }
}

// Eight processes, each a node with its own state folder, write runs (inserted, then completed),
// sweeps, the decisions of those sweeps and job rows for REGIME_STORE_SOAK_S seconds (15 unless
// set); then every row is there exactly once.
TEST_F(ServerStore, EightNodesWriteAtOnceAndEveryRowIsThereOnce) {
  const char* env = std::getenv("REGIME_STORE_SOAK_S");
  const double soak_s = env != nullptr ? std::atof(env) : 15.0;
  constexpr int kNodes = 8;
  std::vector<pid_t> kids;
  for (int n = 0; n < kNodes; ++n) {
    const fs::path state = node_state("node" + std::to_string(n + 1));
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        const auto t0 = Clock::now();
        RunStore store(server_.uri());
        JobStore jobs(server_.uri());
        int i = 0;
        for (; i == 0 || seconds_since(t0) < soak_s; ++i) {
          const std::string tag = "n" + std::to_string(n + 1) + "-" + std::to_string(i);
          RunRecord r;
          r.workload = tag;
          r.id = store.insert(r);
          r.status = "done";
          store.update(r);
          SweepRecord s;
          s.workload = tag;
          s.table_csv = "t";
          DecisionRecord d;
          d.workload = tag;
          d.sweep_id = store.insert_sweep(s);
          store.insert_decision(d);
          jobs.put({tag, "n" + std::to_string(n + 1), "done", {{"i", i}}});
        }
        // A node that lost the server for a moment (a write past its timeout on a loaded
        // machine) sends its queue once the server answers again, as its next regime would.
        for (auto end = Clock::now() + std::chrono::seconds(60);
             (store.offline() || jobs.store().offline() || store.queued_writes() > 0) &&
             Clock::now() < end;) {
          RunStore again(server_.uri());
          if (!again.offline() && again.queued_writes() == 0) break;
        }
        std::ofstream(state / "written") << i << " " << store.offline();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "node %d: %s\n", n + 1, e.what());
        code = 1;
      }
      ::_exit(code);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) EXPECT_TRUE(test::exited_cleanly(k)) << "a node failed";
  size_t expected = 0;
  std::set<std::string> tags;
  for (int n = 0; n < kNodes; ++n) {
    size_t written = 0;
    int went_offline = 0;
    std::ifstream(dir_ / ("node" + std::to_string(n + 1)) / "written") >> written >> went_offline;
    if (went_offline != 0) std::printf("node %d lost the server once and sent its queue\n", n + 1);
    EXPECT_GT(written, 0u) << "node " << n + 1 << " wrote nothing";
    expected += written;
    for (size_t i = 0; i < written; ++i)
      tags.insert("n" + std::to_string(n + 1) + "-" + std::to_string(i));
  }
  node_state("node0");
  RunStore store(server_.uri());
  JobStore jobs(server_.uri());
  auto runs = store.list();
  auto sweeps = store.list_sweeps();
  auto decisions = store.list_decisions();
  EXPECT_EQ(runs.size(), expected);
  EXPECT_EQ(sweeps.size(), expected);
  EXPECT_EQ(decisions.size(), expected);
  std::set<std::string> run_tags, sweep_tags;
  std::map<int64_t, std::string> sweep_of;
  for (const auto& r : runs) {
    EXPECT_EQ(r.status, "done") << r.workload;
    run_tags.insert(r.workload);
  }
  for (const auto& s : sweeps) {
    sweep_tags.insert(s.workload);
    sweep_of[s.id] = s.workload;
  }
  for (const auto& d : decisions) {
    ASSERT_TRUE(d.sweep_id);
    EXPECT_EQ(sweep_of[*d.sweep_id], d.workload);  // each decision names its own sweep
  }
  for (const auto& t : run_tags)
    if (tags.count(t) == 0) std::printf("unexpected %s\n", t.c_str());
  EXPECT_EQ(run_tags, tags);  // with the counts above: each once
  EXPECT_EQ(sweep_tags, tags);
  EXPECT_EQ(count("SELECT COUNT(*) FROM jobs"), expected);
  std::printf("8 nodes, %.0f s: %zu runs, %zu sweeps, %zu decisions, %zu jobs\n", soak_s,
              runs.size(), sweeps.size(), decisions.size(), expected);
}

TEST_F(ServerStore, ANodeQueuesWhatItWritesWhileTheServerIsDownAndSendsItOnceWhenBack) {
  const fs::path state = node_state("n1");
  SweepRecord kept;
  kept.workload = "sim:resnet50";
  kept.gpu_name = "NVIDIA H200";
  kept.table_csv = "t";
  kept.decision = {{"cap_W", 400}};
  {
    RunStore store(server_.uri());
    store.insert_sweep(kept);
    ASSERT_EQ(store.list_sweeps().size(), 1u);  // read once: the node keeps a copy
    store.list_decisions();
  }
  server_.stop();

  auto t0 = Clock::now();
  RunStore store(server_.uri());
  const double open_s = seconds_since(t0);
  EXPECT_TRUE(store.offline());
  EXPECT_LT(open_s, 5.0);
  // Reads of what decides caps come from the node's copy.
  auto sweeps = store.list_sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].decision["cap_W"], 400);
  const auto newest = store.newest_sweep_of("NVIDIA H200", "sim:resnet50");  // from that copy
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->decision["cap_W"], 400);
  EXPECT_FALSE(store.newest_sweep_of("NVIDIA H200", "sim:bert"));
  EXPECT_THROW(store.list(), Error);  // nothing kept of the runs: an error, not an empty list
  // Writes are queued: a run (inserted, then completed), a sweep and its decision, a job.
  RunRecord run;
  run.workload = "queued-run";
  run.id = store.insert(run);
  EXPECT_LT(run.id, 0);
  run.status = "done";
  store.update(run);
  SweepRecord s = kept;
  s.workload = "queued-sweep";
  DecisionRecord d;
  d.workload = "queued-sweep";
  d.cap_W = 350;
  d.sweep_id = store.insert_sweep(s);
  store.insert_decision(d);
  JobStore jobs(server_.uri());
  jobs.put({"7", "n1", "running", {{"policy", "auto"}}});
  jobs.put({"7", "n1", "done", {{"energy_J", 1234.5}}});
  EXPECT_EQ(jobs.get("7", "n1")->status, "done");  // the epilog finds what the prolog wrote
  EXPECT_EQ(store.queued_writes(), 6u);
  std::printf("server down: open %.3f s, 6 writes queued in %.3f s\n", open_s, seconds_since(t0));

  // A copy of the queue, to send everything a second time below.
  fs::copy(state / "server-store", dir_ / "queue-copy", fs::copy_options::recursive);
  ASSERT_TRUE(server_.resume());
  RunStore::retry_servers_now();
  {
    RunStore back(server_.uri());  // sends the queue on open
    EXPECT_FALSE(back.offline());
    EXPECT_EQ(back.queued_writes(), 0u);
  }
  fs::remove_all(state / "server-store");
  fs::copy(dir_ / "queue-copy", state / "server-store", fs::copy_options::recursive);
  RunStore again(server_.uri());  // the same writes sent again: each row still once
  EXPECT_EQ(again.queued_writes(), 0u);
  EXPECT_FALSE(fs::exists(state / "server-store" / fs::path(again.path()).filename() / "failed"));
  auto runs = again.list();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].workload, "queued-run");
  EXPECT_EQ(runs[0].status, "done");
  auto all_sweeps = again.list_sweeps();
  ASSERT_EQ(all_sweeps.size(), 2u);
  auto decisions = again.list_decisions();
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].sweep_id, all_sweeps[0].id);  // the queued sweep's id, given by the server
  EXPECT_EQ(decisions[0].cap_W, 350);
  auto job = JobStore(server_.uri()).get("7", "n1");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, "done");
  EXPECT_EQ(job->record["energy_J"], 1234.5);
}

TEST_F(ServerStore, AServerThatStopsAnsweringCostsAWriteAtMostItsTimeout) {
  node_state("n1");
  RunStore store(server_.uri());
  RunRecord r;
  r.workload = "before";
  store.insert(r);
  store.list_decisions();
  server_.freeze();  // accepts connections, answers nothing
  auto t0 = Clock::now();
  r.workload = "while-frozen";
  const int64_t id = store.insert(r);
  const double write_s = seconds_since(t0);
  EXPECT_LT(id, 0);
  EXPECT_TRUE(store.offline());
  EXPECT_LT(write_s, 8.0);
  {
    t0 = Clock::now();
    RunStore soon(server_.uri());  // another store of this process: offline at once
    EXPECT_TRUE(soon.offline());
    EXPECT_LT(seconds_since(t0), 0.5);
  }
  RunStore::retry_servers_now();  // as a new process (a job starting now): waits the timeouts
  t0 = Clock::now();
  RunStore opened(server_.uri());
  const double open_s = seconds_since(t0);
  EXPECT_TRUE(opened.offline());
  EXPECT_LT(open_s, 8.0);
  EXPECT_TRUE(opened.list_decisions().empty());  // the copy: no decisions then
  std::printf("frozen server: a write gave up after %.2f s, an open after %.2f s\n", write_s,
              open_s);
  server_.thaw();
  RunStore::retry_servers_now();
  RunStore back(server_.uri());
  EXPECT_FALSE(back.offline());
  std::set<std::string> names;
  for (const auto& run : back.list()) names.insert(run.workload);
  EXPECT_EQ(names, (std::set<std::string>{"before", "while-frozen"}));
  EXPECT_EQ(back.list().size(), 2u);
}

}  // namespace
}  // namespace regime
