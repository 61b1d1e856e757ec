#include "store/run_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "common/error.hpp"
#include "mariadb/test_server.hpp"
#include "store/sqlite_db.hpp"
#include "support/cli_run.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;

// The tests that hold for any backend run twice: on a SQLite file and on a MariaDB server of
// their own (tests/mariadb/test_server.hpp), each in a fresh temporary folder that is also the
// node's state folder.
enum class Backend { Sqlite, MariaDb };

class StoreBackends : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "state");
    fs::permissions(dir_ / "state", fs::perms::owner_all, fs::perm_options::replace);
    ::setenv("REGIME_STATE_DIR", (dir_ / "state").c_str(), 1);
    if (GetParam() == Backend::MariaDb) server_.start(dir_ / "server");
  }
  void TearDown() override {
    server_.stop();
    ::unsetenv("REGIME_STATE_DIR");
  }
  // The store: a file in the folder, or the server's database.
  fs::path db() const {
    return GetParam() == Backend::Sqlite ? dir_ / "runs.sqlite" : fs::path(server_.uri());
  }
  test::TempDir tmp_{"regime-store-test"};
  const fs::path dir_ = tmp_.path;
  testing::MariaDbTestServer server_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreBackends,
                         ::testing::Values(Backend::Sqlite, Backend::MariaDb), [](const auto& p) {
                           return p.param == Backend::Sqlite ? "Sqlite" : "MariaDb";
                         });

class RunStoreTest : public ::testing::Test {
 protected:
  test::TempDir tmp_{"regime-store-test"};
  const fs::path dir_ = tmp_.path;
};

RunRecord sample_record() {
  RunRecord r;
  r.started_at_s = 1795977934.86;
  r.started_at_utc = "2026-11-29T19:00:00Z";
  r.device = "nvml:0";
  r.gpu_name = "NVIDIA H200";
  r.gpu_uuid = "GPU-1234";
  r.workload = "python3 train.py --model resnet50";
  r.options = {{"seconds", 60}, {"sample_ms", 10}};
  return r;
}

TEST_F(RunStoreTest, CreatesTheFileWithASchemaVersionAndRoundTripsARun) {
  fs::path db = dir_ / "sub" / "runs.sqlite";
  int64_t id = 0;
  {
    RunStore store(db);
    id = store.insert(sample_record());
    EXPECT_GT(id, 0);
  }
  ASSERT_TRUE(fs::exists(db));
  RunStore store(db);  // reopen: nothing lost
  auto got = store.get(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, id);
  EXPECT_EQ(got->device, "nvml:0");
  EXPECT_EQ(got->gpu_name, "NVIDIA H200");
  EXPECT_EQ(got->gpu_uuid, "GPU-1234");
  EXPECT_EQ(got->workload, "python3 train.py --model resnet50");
  EXPECT_DOUBLE_EQ(got->started_at_s, 1795977934.86);
  EXPECT_EQ(got->options["sample_ms"], 10);
  EXPECT_EQ(got->status, "running");
  EXPECT_FALSE(got->exit_status);
  EXPECT_FALSE(got->regime);
  EXPECT_TRUE(got->measurement.is_null());

  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), kRunStoreSchemaVersion);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_P(StoreBackends, UpdateCompletesARunAndListIsNewestFirst) {
  RunStore store(db());
  int64_t a = store.insert(sample_record());
  RunRecord b_rec = sample_record();
  b_rec.device = "sim:h200";
  int64_t b = store.insert(b_rec);
  RunRecord done = *store.get(a);
  done.status = "done";
  done.exit_status = 0;
  done.trace_path = "/tmp/run-1.trace.csv";
  done.steps_path = "/tmp/run-1.steps.csv";
  done.regime = "headroom";
  done.confidence = 0.82;
  done.measurement = {{"steps", 812}, {"energy_per_step_J", 33.95}};
  done.report = {{"regime", "headroom"}};
  store.update(done);
  auto got = store.get(a);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, "done");
  EXPECT_EQ(got->exit_status, 0);
  EXPECT_EQ(got->regime, "headroom");
  EXPECT_DOUBLE_EQ(*got->confidence, 0.82);
  EXPECT_DOUBLE_EQ(got->measurement["energy_per_step_J"].get<double>(), 33.95);
  EXPECT_EQ(got->trace_path, "/tmp/run-1.trace.csv");
  auto all = store.list();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, b);
  EXPECT_EQ(all[1].id, a);
  EXPECT_EQ(store.list(1).size(), 1u);
  EXPECT_FALSE(store.get(b + 100));
  RunRecord ghost = sample_record();
  ghost.id = b + 100;
  try {
    store.update(ghost);
    FAIL() << "updated a run that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
  }
}

// A row is input: whatever its decision_json or columns hold, it reads back with a reason, never
// as an exception (a job's prolog decides from it).
TEST_P(StoreBackends, ASweepRowThatDoesNotReadWholeComesBackWithWhyNeverAsAnError) {
  RunStore store(db());
  SweepRecord s;
  s.gpu_name = "NVIDIA H200";
  s.workload = "train.py";
  s.table_csv = "t";
  s.decision = {{"keep_default", false}, {"cap_W", 300}};
  const int64_t id = store.insert_sweep(s);
  auto raw = [&](const std::string& sql) {
    if (GetParam() == Backend::MariaDb) {
      server_.admin("USE regime; " + sql);
      return;
    }
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(h);
  };
  const std::string where = " WHERE id = " + std::to_string(id);
  for (const char* text : {"{", "NaN", "[1e999]", "cap 300"}) {
    raw(std::string("UPDATE sweeps SET decision_json = '") + text + "'" + where);
    std::optional<SweepRecord> got;
    ASSERT_NO_THROW(got = store.newest_sweep_of("NVIDIA H200", "train.py")) << text;
    ASSERT_TRUE(got) << text;
    EXPECT_EQ(got->id, id);
    EXPECT_EQ(got->unreadable, "its decision_json is not JSON text") << text;
    EXPECT_TRUE(got->decision.is_null()) << text;
  }
  if (GetParam() == Backend::Sqlite) {  // SQLite keeps any value in any column
    raw("UPDATE sweeps SET decision_json = '{}', default_limit_W = 'abc'" + where);
    std::optional<SweepRecord> got;
    ASSERT_NO_THROW(got = store.newest_sweep_of("NVIDIA H200", "train.py"));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->id, id);
    EXPECT_NE(got->unreadable.find("column default_limit_W: 'abc' is not a number"),
              std::string::npos)
        << got->unreadable;
  }
  // A whole row reads as it was written.
  raw("UPDATE sweeps SET decision_json = '{}', default_limit_W = 0" + where);
  EXPECT_EQ(store.newest_sweep_of("NVIDIA H200", "train.py")->unreadable, "");
}

TEST_P(StoreBackends, EveryRowNamesTheMachineItWasMadeOn) {
  char here[256] = {};
  ASSERT_EQ(::gethostname(here, sizeof here - 1), 0);
  RunStore store(db());
  const int64_t run = store.insert(sample_record());
  SweepRecord s;
  s.table_csv = "t";
  const int64_t sweep = store.insert_sweep(s);
  DecisionRecord d;
  d.provenance.host = "n7";  // made elsewhere, kept here
  const int64_t decision = store.insert_decision(d);
  EXPECT_EQ(store.get(run)->host, here);
  EXPECT_EQ(store.get_sweep(sweep)->provenance.host, here);
  EXPECT_EQ(store.get_decision(decision)->provenance.host, "n7");
}

TEST_F(RunStoreTest, RefusesAFileThatIsNotARunDatabase) {
  fs::path bogus = dir_ / "notes.sqlite";
  std::ofstream(bogus) << "this is not a database, just some text that is long enough to matter\n"
                       << std::string(200, 'x');
  try {
    RunStore store(bogus);
    FAIL() << "opened a text file as a database";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_NE(std::string(e.what()).find(bogus.string()), std::string::npos);
  }
}

TEST(SqliteFailure, EachFailureSaysWhatFailed) {
  auto says = [](int code, int system_errno) {
    return sql::sqlite_failure("runs.sqlite", code, system_errno, "msg", 30000);
  };
  EXPECT_EQ(says(SQLITE_BUSY, 0),
            "run database runs.sqlite is locked by another process or connection: waited 30 s for "
            "it (SQLITE_BUSY: msg)");
  EXPECT_NE(says(SQLITE_FULL, ENOSPC).find("cannot grow: the disk is full"), std::string::npos);
  EXPECT_NE(says(SQLITE_IOERR_WRITE, EFBIG).find("cannot grow"), std::string::npos);
  EXPECT_NE(says(SQLITE_IOERR_WRITE, 0).find("cannot be written: the disk is full"),
            std::string::npos);
  EXPECT_EQ(says(SQLITE_CORRUPT, 0), "run database runs.sqlite is corrupt (SQLITE_CORRUPT: msg)");
  EXPECT_NE(says(SQLITE_NOTADB, 0).find("not SQLite"), std::string::npos);
  EXPECT_EQ(says(SQLITE_BUSY, 0).find("not SQLite"), std::string::npos);
  EXPECT_EQ(says(SQLITE_READONLY, 0), "run database runs.sqlite: msg");
}

TEST_F(RunStoreTest, AFolderAtThePathIsSaidToBeAFolder) {
  fs::create_directories(dir_ / "runs.sqlite");
  try {
    RunStore store(dir_ / "runs.sqlite");
    FAIL() << "opened a folder as a database";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("is a folder, not a file"), std::string::npos) << e.what();
  }
}

TEST_P(StoreBackends, KeepsSweepsWithTheirTableAndDecision) {
  RunStore store(db());
  SweepRecord r;
  r.started_at_utc = "2026-12-01T04:00:00Z";
  r.kind = "study";
  r.device = "sim:l4";
  r.gpu_name = "NVIDIA L4";
  r.gpu_uuid = "sim-l4-0";
  r.workload = "sim:resnet50";
  r.strategy = "adaptive";
  r.objective = "energy";
  r.default_limit_W = 72;
  r.max_limit_W = 72;
  r.table_csv = "workload,gpu,cap_W,time_s,avg_power_W,unit\nw,L4,72,0.1,70,step\n";
  r.decision = {{"cap_W", 64}, {"keep_default", false}};
  int64_t a = store.insert_sweep(r);
  r.kind = "sweep";
  int64_t b = store.insert_sweep(r);
  EXPECT_GT(b, a);
  auto got = store.get_sweep(a);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->kind, "study");
  EXPECT_EQ(got->table_csv, r.table_csv);
  EXPECT_EQ(got->decision["cap_W"], 64);
  EXPECT_TRUE(got->report.is_null());
  auto all = store.list_sweeps();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, b);  // newest first
  EXPECT_FALSE(store.get_sweep(b + 1));
}

TEST_F(RunStoreTest, AVersionOneFileIsUpgradedAndKeepsItsRuns) {
  fs::path db = dir_ / "v1.sqlite";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  // The version 1 schema, as an older regime wrote it, with one run.
  ASSERT_EQ(
      sqlite3_exec(raw,
                   "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                   " started_at_s REAL NOT NULL, started_at_utc TEXT NOT NULL,"
                   " device TEXT NOT NULL, gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL,"
                   " workload TEXT NOT NULL, options_json TEXT, status TEXT NOT NULL,"
                   " exit_status INTEGER, trace_path TEXT NOT NULL, steps_path TEXT NOT NULL,"
                   " regime TEXT, confidence REAL, measurement_json TEXT, report_json TEXT);"
                   "INSERT INTO runs (started_at_s, started_at_utc, device, gpu_name, gpu_uuid,"
                   " workload, status, trace_path, steps_path) VALUES (1, 'x', 'sim:t4', 'T4',"
                   " 'u', 'sim:vgg16', 'done', 't', 's');"
                   "PRAGMA user_version = 1;",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(raw);
  RunStore store(db);
  ASSERT_EQ(store.list().size(), 1u);
  EXPECT_EQ(store.list()[0].workload, "sim:vgg16");
  SweepRecord r;
  r.table_csv = "x";
  EXPECT_EQ(store.insert_sweep(r), 1);
}

// What `--gpu-power=auto` decides from: the newest sweep of one GPU model and workload, whatever
// else the store holds.
TEST_P(StoreBackends, TheNewestSweepOfAModelAndWorkloadIsFoundAmongOthers) {
  RunStore store(db());
  auto sweep = [&](const std::string& gpu, const std::string& workload, double cap_W) {
    SweepRecord r;
    r.gpu_name = gpu;
    r.workload = workload;
    r.decision = {{"cap_W", cap_W}, {"keep_default", false}};
    return store.insert_sweep(r);
  };
  sweep("NVIDIA H200", "bert", 500);
  const int64_t newest = sweep("NVIDIA H200", "bert", 450);
  sweep("NVIDIA H200", "resnet50", 400);
  sweep("NVIDIA L4", "bert", 60);
  const auto got = store.newest_sweep_of("NVIDIA H200", "bert");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, newest);
  EXPECT_EQ(got->decision["cap_W"], 450);
  EXPECT_EQ(store.newest_sweep_of("NVIDIA L4", "bert")->decision["cap_W"], 60);
  EXPECT_FALSE(store.newest_sweep_of("NVIDIA L4", "resnet50"));
  EXPECT_FALSE(store.newest_sweep_of("NVIDIA H200", "BERT"));  // names match exactly
}

TEST_P(StoreBackends, KeepsLlmAnswersByModelAndWholePrompt) {
  RunStore store(db());
  EXPECT_FALSE(store.find_llm_answer("m", "prompt"));
  store.put_llm_answer("m", "prompt", "{\"avg_power_W\": 230}", "2026-12-01T07:00:00Z");
  EXPECT_EQ(store.find_llm_answer("m", "prompt").value_or(""), "{\"avg_power_W\": 230}");
  EXPECT_FALSE(store.find_llm_answer("other-model", "prompt"));
  EXPECT_FALSE(store.find_llm_answer("m", "prompt "));  // the whole prompt, not a prefix
  store.put_llm_answer("m", "prompt", "250 W", "2026-12-01T07:01:00Z");
  EXPECT_EQ(store.find_llm_answer("m", "prompt").value_or(""), "250 W");
  EXPECT_EQ(store.count_llm_answers(), 1u);
}

TEST_F(RunStoreTest, AVersionThreeFileGainsTheAnswerCacheAndKeepsItsSweeps) {
  fs::path db = dir_ / "v2.sqlite";
  {
    RunStore store(db);
    SweepRecord r;
    r.table_csv = "kept";
    store.insert_sweep(r);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE llm_answers; PRAGMA user_version = 3;", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  RunStore store(db);
  ASSERT_EQ(store.list_sweeps().size(), 1u);
  EXPECT_EQ(store.list_sweeps()[0].table_csv, "kept");
  store.put_llm_answer("m", "p", "a", "t");
  EXPECT_EQ(store.count_llm_answers(), 1u);
}

// The version 2 schema exactly as the previous regime wrote it: runs and sweeps.
void write_version_two(const fs::path& db) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(
          raw,
          "CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT,"
          " started_at_s REAL NOT NULL, started_at_utc TEXT NOT NULL,"
          " device TEXT NOT NULL, gpu_name TEXT NOT NULL, gpu_uuid TEXT NOT NULL,"
          " workload TEXT NOT NULL, options_json TEXT, status TEXT NOT NULL,"
          " exit_status INTEGER, trace_path TEXT NOT NULL, steps_path TEXT NOT NULL,"
          " regime TEXT, confidence REAL, measurement_json TEXT, report_json TEXT);"
          "CREATE TABLE sweeps (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at_utc TEXT NOT "
          "NULL, kind TEXT NOT NULL, device TEXT NOT NULL, gpu_name TEXT NOT NULL, gpu_uuid TEXT "
          "NOT NULL, workload TEXT NOT NULL, strategy TEXT NOT NULL, objective TEXT NOT NULL,"
          " default_limit_W REAL NOT NULL, max_limit_W REAL NOT NULL, table_csv TEXT NOT NULL,"
          " decision_json TEXT, report_json TEXT);"
          "INSERT INTO runs (started_at_s, started_at_utc, device, gpu_name, gpu_uuid, workload,"
          " options_json, status, exit_status, trace_path, steps_path, regime, confidence,"
          " measurement_json, report_json) VALUES (7.5, '2026-11-30T10:00:00Z', 'nvml:0',"
          " 'NVIDIA H200', 'GPU-1', 'python3 train.py', '{\"seconds\":60}', 'done', 0, 't.csv',"
          " 's.csv', 'cap-bound', 0.9, '{\"avg_power_W\":688}', '{\"regime\":\"cap-bound\"}');"
          "INSERT INTO sweeps (started_at_utc, kind, device, gpu_name, gpu_uuid, workload,"
          " strategy, objective, default_limit_W, max_limit_W, table_csv, decision_json,"
          " report_json) VALUES ('2026-11-30T11:00:00Z', 'study', 'sim:l4', 'NVIDIA L4', 'u',"
          " 'sim:resnet50', 'adaptive', 'energy', 72, 72, 'workload,gpu\n', '{\"cap_W\":60}',"
          " '{\"probes\":4}');"
          "PRAGMA user_version = 2;",
          nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(raw);
}

TEST_F(RunStoreTest, AVersionTwoFileIsMigratedWithNothingLost) {
  fs::path db = dir_ / "v2.sqlite";
  write_version_two(db);
  RunStore store(db);
  auto runs = store.list();
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord& r = runs[0];
  EXPECT_EQ(r.id, 1);
  EXPECT_DOUBLE_EQ(r.started_at_s, 7.5);
  EXPECT_EQ(r.started_at_utc, "2026-11-30T10:00:00Z");
  EXPECT_EQ(r.device, "nvml:0");
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  EXPECT_EQ(r.gpu_uuid, "GPU-1");
  EXPECT_EQ(r.workload, "python3 train.py");
  EXPECT_EQ(r.options["seconds"], 60);
  EXPECT_EQ(r.status, "done");
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.trace_path, "t.csv");
  EXPECT_EQ(r.steps_path, "s.csv");
  EXPECT_EQ(r.regime, "cap-bound");
  EXPECT_DOUBLE_EQ(*r.confidence, 0.9);
  EXPECT_EQ(r.measurement["avg_power_W"], 688);
  EXPECT_EQ(r.report["regime"], "cap-bound");
  EXPECT_EQ(r.driver_version, "");  // unknown for rows kept before schema 3
  auto sweeps = store.list_sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].kind, "study");
  EXPECT_EQ(sweeps[0].workload, "sim:resnet50");
  EXPECT_DOUBLE_EQ(sweeps[0].default_limit_W, 72);
  EXPECT_EQ(sweeps[0].table_csv, "workload,gpu\n");
  EXPECT_EQ(sweeps[0].decision["cap_W"], 60);
  EXPECT_EQ(sweeps[0].report["probes"], 4);
  // The new tables work, new rows continue the ids.
  SweepRecord more;
  more.table_csv = "x";
  more.provenance.driver_version = "580.95.05";
  EXPECT_EQ(store.insert_sweep(more), 2);
  EXPECT_EQ(store.get_sweep(2)->provenance.driver_version, "580.95.05");
  EXPECT_FALSE(store.get_sweep(2)->provenance.regime_version.empty());
  DecisionRecord d;
  d.source = "recommend";
  d.sweep_id = 1;
  d.objective = "zeus:0.5";
  d.cap_W = 64;
  EXPECT_EQ(store.insert_decision(d), 1);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), kRunStoreSchemaVersion);
  sqlite3_finalize(st);
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_F(RunStoreTest, AFileAnotherBuildNumberedThreeStillGetsTheseTables) {
  // Another build's version 3 (an answer cache) without this one's tables and columns.
  fs::path db = dir_ / "other3.sqlite";
  write_version_two(db);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "CREATE TABLE llm_answers (model TEXT NOT NULL, prompt TEXT NOT NULL,"
                         " answer TEXT NOT NULL, answered_at_utc TEXT NOT NULL,"
                         " PRIMARY KEY (model, prompt));"
                         "INSERT INTO llm_answers VALUES ('m', 'p', 'a', 't');"
                         "PRAGMA user_version = 3;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  {
    RunStore store(db);
    SweepRecord s;
    s.table_csv = "x";
    s.provenance.driver_version = "580";
    EXPECT_EQ(store.get_sweep(store.insert_sweep(s))->provenance.driver_version, "580");
    EXPECT_EQ(store.list().size(), 1u);
  }
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT answer FROM llm_answers", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);  // the other build's rows stay
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_P(StoreBackends, KeepsDecisionsStudiesAndControllerRunsWithTheirProvenance) {
  RunStore store(db());
  Provenance p;
  p.driver_version = "580.95.05";
  p.options = {{"objective", "energy"}};
  DecisionRecord d;
  d.made_at_utc = "2026-12-01T08:00:00Z";
  d.source = "sweep";
  d.sweep_id = 3;
  d.device = "nvml:0,nvml:1";
  d.gpu_name = "2x NVIDIA H200";
  d.workload = "torchrun train.py";
  d.objective = "energy";
  d.decision = {{"cap_W", 600}};
  d.provenance = p;
  store.insert_decision(d);
  d.cap_W = 550;
  store.insert_decision(d);
  auto ds = store.list_decisions();
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].cap_W, 550);  // newest first
  EXPECT_FALSE(ds[1].cap_W);
  EXPECT_EQ(ds[1].sweep_id, 3);
  EXPECT_EQ(ds[1].gpu_name, "2x NVIDIA H200");
  EXPECT_EQ(ds[1].provenance.driver_version, "580.95.05");
  EXPECT_EQ(ds[1].provenance.options["objective"], "energy");
  EXPECT_EQ(ds[1].decision["cap_W"], 600);

  StudyRecord st;
  st.device = "sim:t4";
  st.workload = "sim:cnn5";
  st.regime = "cap-bound";
  st.report = {{"x", 1}};
  st.provenance = p;
  int64_t sid = store.insert_study(st);
  auto got = store.get_study(sid);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->regime, "cap-bound");
  EXPECT_FALSE(got->sweep_id);
  EXPECT_EQ(got->report["x"], 1);
  EXPECT_EQ(store.list_studies().size(), 1u);

  ControlRunRecord c;
  c.device = "sim:t4";
  c.policy = "thermal";
  c.provenance = p;
  int64_t cid = store.insert_control_run(c);
  ASSERT_TRUE(store.get_control_run(cid));
  EXPECT_EQ(store.get_control_run(cid)->policy, "thermal");
  EXPECT_EQ(store.list_control_runs().size(), 1u);
}

TEST_F(RunStoreTest, SeveralProcessesWriteAtOnceAndNothingIsLost) {
  // Eight processes open an old (version 2) file together, so they also race to migrate it, then
  // each keeps 25 runs, 25 sweeps and 25 decisions.
  fs::path db = dir_ / "shared.sqlite";
  write_version_two(db);
  constexpr int kProcs = 8, kEach = 25;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        RunStore store(db);
        for (int i = 0; i < kEach; ++i) {
          RunRecord r;
          r.workload = "proc" + std::to_string(p);
          r.id = store.insert(r);
          r.status = "done";
          store.update(r);
          SweepRecord s;
          s.table_csv = "t";
          s.workload = r.workload;
          store.insert_sweep(s);
          DecisionRecord d;
          d.workload = r.workload;
          store.insert_decision(d);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d: %s\n", p, e.what());
        code = 1;
      }
      ::_exit(code);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) EXPECT_TRUE(test::exited_cleanly(k)) << "a writer failed";
  RunStore store(db);
  auto runs = store.list();
  EXPECT_EQ(runs.size(), 1u + kProcs * kEach);
  for (const auto& r : runs) {
    if (r.id > 1) {
      EXPECT_EQ(r.status, "done");
    }
  }
  EXPECT_EQ(store.list_sweeps().size(), 1u + kProcs * kEach);
  EXPECT_EQ(store.list_decisions().size(), static_cast<size_t>(kProcs * kEach));
}

TEST_F(RunStoreTest, RefusesANewerSchema) {
  fs::path db = dir_ / "future.sqlite";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    RunStore store(db);
    FAIL() << "opened a newer schema";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos);
  }
}

TEST_F(RunStoreTest, SaysWhichFileCannotBeOpened) {
  fs::path blocked = dir_ / "file";
  std::ofstream(blocked) << "x";
  try {
    RunStore store(blocked / "runs.sqlite");  // a directory under a plain file
    FAIL() << "opened a database under a file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("runs.sqlite"), std::string::npos);
  }
}

}  // namespace
}  // namespace regime
