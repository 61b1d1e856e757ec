#include "store/run_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fstream>

#include "common/error.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;

class RunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/regime-store-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
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

TEST_F(RunStoreTest, UpdateCompletesARunAndListIsNewestFirst) {
  RunStore store(dir_ / "runs.sqlite");
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

TEST_F(RunStoreTest, KeepsSweepsWithTheirTableAndDecision) {
  RunStore store(dir_ / "runs.sqlite");
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

TEST_F(RunStoreTest, KeepsLlmAnswersByModelAndWholePrompt) {
  RunStore store(dir_ / "runs.sqlite");
  EXPECT_FALSE(store.find_llm_answer("m", "prompt"));
  store.put_llm_answer("m", "prompt", "{\"avg_power_W\": 230}", "2026-12-01T07:00:00Z");
  EXPECT_EQ(store.find_llm_answer("m", "prompt").value_or(""), "{\"avg_power_W\": 230}");
  EXPECT_FALSE(store.find_llm_answer("other-model", "prompt"));
  EXPECT_FALSE(store.find_llm_answer("m", "prompt "));  // the whole prompt, not a prefix
  store.put_llm_answer("m", "prompt", "250 W", "2026-12-01T07:01:00Z");
  EXPECT_EQ(store.find_llm_answer("m", "prompt").value_or(""), "250 W");
  EXPECT_EQ(store.count_llm_answers(), 1u);
}

TEST_F(RunStoreTest, AVersionTwoFileGainsTheAnswerCacheAndKeepsItsSweeps) {
  fs::path db = dir_ / "v2.sqlite";
  {
    RunStore store(db);
    SweepRecord r;
    r.table_csv = "kept";
    store.insert_sweep(r);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE llm_answers; PRAGMA user_version = 2;", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  RunStore store(db);
  ASSERT_EQ(store.list_sweeps().size(), 1u);
  EXPECT_EQ(store.list_sweeps()[0].table_csv, "kept");
  store.put_llm_answer("m", "p", "a", "t");
  EXPECT_EQ(store.count_llm_answers(), 1u);
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
