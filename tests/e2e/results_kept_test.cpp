// Results kept: a sweep's table written with --table-out and the same sweep kept in the run
// database decide alike under other objectives; decisions and studies are kept with what they
// were made with; a study of several simulated GPUs prints one table. And nothing measured is
// lost: where the run database fails (corrupt, a folder, locked, full), the sweep or study is
// printed all the same and kept in a file of the state folder, and the command exits 7.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "store/run_store.hpp"
#include "support/sandbox.hpp"

namespace regime::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ResultsKeptCli : public ::testing::Test {
 protected:
  RunResult regime(const std::vector<std::string>& args) { return sb_.regime(args); }
  json regime_json(const std::vector<std::string>& args) { return sb_.regime_json(args); }
  // Rows of one column of a table in the run database.
  std::vector<std::string> column(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((sb_.state_dir() / "runs.sqlite").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out.push_back(t != nullptr ? reinterpret_cast<const char*>(t) : "NULL");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }
  Sandbox sb_;
};

TEST_F(ResultsKeptCli, AKeptSweepAndItsWrittenTableDecideAlikeUnderOtherObjectives) {
  const std::string table = (sb_.path() / "l4.csv").string();
  json swept =
      regime_json({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50", "--strategy",
                   "exhaustive", "--caps", "72,68,64,60", "--table-out", table, "--json"});
  ASSERT_EQ(swept["stored_as"], "sweep:1");
  EXPECT_NE(read_text(table).find("sim:resnet50,NVIDIA L4,60,"), std::string::npos);
  RunResult listed = regime({"runs"});
  EXPECT_NE(listed.out.find("sweep:1"), std::string::npos) << listed.out;
  RunResult shown = regime({"runs", "show", "sweep:1"});
  EXPECT_NE(shown.out.find("sim:resnet50,NVIDIA L4,60,"), std::string::npos) << shown.out;
  for (const std::string objective : {"zeus:0.5", "max-slowdown:5"}) {
    json kept = regime_json({"recommend", "--run", "sweep:1", "--objective", objective, "--json"});
    json file = regime_json({"recommend", "--sweep", table, "--objective", objective, "--json"});
    ASSERT_EQ(kept["workloads"].size(), 1u);
    ASSERT_EQ(file["workloads"].size(), 1u);
    EXPECT_EQ(kept["workloads"][0]["decision"]["cap_W"], file["workloads"][0]["decision"]["cap_W"])
        << objective;
    EXPECT_EQ(kept["workloads"][0]["decision"]["keep_default"],
              file["workloads"][0]["decision"]["keep_default"])
        << objective;
  }
  // The sweep's decision and the two made again are kept, with the Regime version.
  EXPECT_EQ(column("SELECT source FROM decisions ORDER BY id"),
            (std::vector<std::string>{"sweep", "recommend", "recommend"}));
  EXPECT_EQ(column("SELECT objective FROM decisions WHERE source='recommend' ORDER BY id"),
            (std::vector<std::string>{"zeus:0.5", "max-slowdown:5"}));
  for (const auto& v : column("SELECT regime_version FROM decisions")) EXPECT_NE(v, "");
  EXPECT_EQ(column("SELECT driver_version FROM sweeps"), (std::vector<std::string>{"sim"}));
}

TEST_F(ResultsKeptCli, AStudyOfThreeSimulatedGpusPrintsOneTableAndKeepsEachStudy) {
  RunResult r = regime({"study", "--device", "sim:t4,sim:gv100,sim:l4", "--workload",
                        "sim:resnet50", "--probe-seconds", "30"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("controller (effect)"), std::string::npos) << r.out;
  for (const char* gpu : {"Tesla T4", "Quadro GV100", "NVIDIA L4"})
    EXPECT_NE(r.out.find(gpu), std::string::npos) << r.out;
  // Each row says whether its decision rests on a calibrated or a predicted twin figure.
  size_t marked = 0;
  for (size_t p = 0; (p = r.out.find("calibrated", p)) != std::string::npos; ++p) ++marked;
  for (size_t p = 0; (p = r.out.find("predicted", p)) != std::string::npos; ++p) ++marked;
  EXPECT_EQ(marked, 3u) << r.out;
  EXPECT_EQ(column("SELECT device FROM studies ORDER BY id"),
            (std::vector<std::string>{"sim:t4", "sim:gv100", "sim:l4"}));
}

// The study's table on its kind of model: the T4 held by its cap, where no lower cap pays; the
// GV100 with headroom; the L4 held by its cap, yet saving energy under a lower one.
TEST_F(ResultsKeptCli, TheStudysFindingsOnAFiveLayerCnnAreReproduced) {
  RunResult r =
      regime({"study", "--device", "sim:t4,sim:gv100,sim:l4", "--workload", "sim:cnn5", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["regime"]["regime"], "cap-bound");
  EXPECT_TRUE(j[0]["decision"]["keep_default"].get<bool>()) << j[0]["decision"].dump(2);
  EXPECT_EQ(j[1]["regime"]["regime"], "headroom");
  EXPECT_EQ(j[2]["regime"]["regime"], "cap-bound");
  EXPECT_FALSE(j[2]["decision"]["keep_default"].get<bool>()) << j[2]["decision"].dump(2);
  EXPECT_LT(j[2]["decision"]["cap_W"].get<double>(), 72.0);
  for (const auto& s : j) {
    const std::string basis = s["basis"];
    EXPECT_TRUE(basis == "calibrated" || basis == "predicted") << basis;
  }
}

// `regime args` under a file size limit, SIGXFSZ ignored: a write past the limit fails with
// EFBIG, as a write to a full disk fails with ENOSPC (no tmpfs of a small size needs root).
RunResult run_with_file_size_limit(const Sandbox& sb, const std::vector<std::string>& args,
                                   rlim_t limit_bytes) {
  const fs::path out = sb.path() / "limited.out", err = sb.path() / "limited.err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit limit{limit_bytes, limit_bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::signal(SIGXFSZ, SIG_IGN);  // ignored dispositions survive exec
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    if (::chdir(sb.path().c_str()) != 0) ::_exit(126);
    for (const auto& [k, v] : sb.env) ::setenv(k.c_str(), v.c_str(), 1);
    std::string bin = REGIME_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {decode_status(st), read_text(out), read_text(err)};
}

// A run database that fails in each way a store can, and what the sweep says of it.
struct StoreFault {
  std::string name;
  std::function<std::string(Sandbox&)> make;  // returns the --db path
  std::string says;                           // in the message
  rlim_t file_size_limit;                     // 0: none
};

std::vector<StoreFault> store_faults() {
  return {
      {"a file of random bytes",
       [](Sandbox& sb) {
         const fs::path p = sb.path() / "junk.sqlite";
         std::string bytes(8192, '\0');
         for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919) % 251);
         write_text(p, bytes);
         return p.string();
       },
       "is corrupt or not a Regime run database: not SQLite", 0},
      {"a run database with its pages overwritten",
       [](Sandbox& sb) {
         const fs::path p = sb.path() / "broken.sqlite";
         { RunStore made(p); }
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(4096);
         const std::string junk(3 * 4096, '\xff');
         f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
         return p.string();
       },
       "is corrupt (SQLITE_CORRUPT", 0},
      {"a folder at the path",
       [](Sandbox& sb) {
         fs::create_directories(sb.path() / "folder.sqlite");
         return (sb.path() / "folder.sqlite").string();
       },
       "is a folder, not a file", 0},
      {"a full disk (a file size limit of 32 KiB)",
       [](Sandbox& sb) { return (sb.path() / "full.sqlite").string(); },
       "the disk is full, a file size limit was reached", 32768},
  };
}

// What a sweep printed and what its results file holds: the same table and decision.
void expect_kept_in_a_file(const RunResult& r, const std::string& says, const std::string& what) {
  EXPECT_EQ(r.status, 7) << what << ": " << r.err;
  EXPECT_THAT(r.err, HasSubstr("regime: not kept in the run database: ")) << what;
  EXPECT_THAT(r.err, HasSubstr(says)) << what;
  const json printed = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(printed.is_object()) << what << ": " << r.out;
  ASSERT_EQ(printed["results"].size(), 4u) << what;
  ASSERT_TRUE(printed["decision"].is_object()) << what;
  EXPECT_FALSE(printed.contains("stored_as")) << what;
  EXPECT_THAT(printed["store_failed"]["error"].get<std::string>(), HasSubstr(says)) << what;
  const std::string file = printed["store_failed"]["results_file"].get<std::string>();
  EXPECT_THAT(r.err, HasSubstr("the results are kept in " + file)) << what;
  ASSERT_TRUE(fs::is_regular_file(file)) << what << ": " << file;
  const json kept = json::parse(read_text(file));
  EXPECT_EQ(kept["report"]["decision"], printed["decision"]) << what;
  EXPECT_EQ(kept["report"]["results"], printed["results"]) << what;
  EXPECT_THAT(kept["table_csv"].get<std::string>(), HasSubstr("sim:resnet50,NVIDIA L4,60,"))
      << what;
  EXPECT_THAT(kept["store_failed"].get<std::string>(), HasSubstr(says)) << what;
}

const std::vector<std::string> kSweep = {"sweep",        "--device",   "sim:l4",     "--workload",
                                         "sim:resnet50", "--strategy", "exhaustive", "--caps",
                                         "72,68,64,60",  "--quiet"};

TEST_F(ResultsKeptCli, WhenTheRunDatabaseFailsTheSweepIsPrintedAndKeptInAFile) {
  for (const StoreFault& fault : store_faults()) {
    std::vector<std::string> args = kSweep;
    for (const std::string& a : {std::string("--db"), fault.make(sb_), std::string("--json")})
      args.push_back(a);
    const RunResult r = fault.file_size_limit > 0
                            ? run_with_file_size_limit(sb_, args, fault.file_size_limit)
                            : sb_.regime(args);
    expect_kept_in_a_file(r, fault.says, fault.name);
  }
  // As text: the table and the decision, then what failed and where they are.
  std::vector<std::string> args = kSweep;
  for (const std::string& a : {std::string("--db"), (sb_.path() / "folder.sqlite").string()})
    args.push_back(a);
  const RunResult text = regime(args);
  EXPECT_EQ(text.status, 7);
  EXPECT_THAT(text.out, HasSubstr("   cap W "));
  EXPECT_THAT(text.out, HasSubstr("decision: 60 W"));
  EXPECT_THAT(text.out, HasSubstr("not kept in the run database: run database " +
                                  (sb_.path() / "folder.sqlite").string() +
                                  " is a folder, not a file; the results are kept in "));
}

TEST_F(ResultsKeptCli, ALockHeldPastTheBusyTimeoutIsSaidToBeALockAndTheSweepIsKept) {
  const fs::path db = sb_.path() / "locked.sqlite";
  { RunStore made(db); }
  // Another connection holds the file exclusively (no reader gets in), as a long write does.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder,
                         "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;"
                         " INSERT INTO llm_answers VALUES ('m', 'p', 'a', 't');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(holder);
  std::vector<std::string> args = kSweep;
  for (const std::string& a : {std::string("--db"), db.string(), std::string("--json")})
    args.push_back(a);
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = sb_.regime(args, {{"REGIME_DB_BUSY_TIMEOUT_S", "1"}});
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  expect_kept_in_a_file(
      r, "is locked by another process or connection: waited 1 s for it (SQLITE_BUSY", "a lock");
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("not SQLite")));
  EXPECT_LT(took_s, 20) << "waited for the lock far longer than the 1 s asked";
}

TEST_F(ResultsKeptCli, WhenTheRunDatabaseFailsTheStudyIsPrintedAndKeptInAFile) {
  const std::string folder = (sb_.path() / "folder.sqlite").string();
  fs::create_directories(folder);
  const RunResult r = regime({"study", "--device", "sim:l4", "--workload", "sim:cnn5", "--db",
                              folder, "--json", "--quiet"});
  EXPECT_EQ(r.status, 7) << r.err;
  const json printed = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(printed.is_object()) << r.out << r.err;
  ASSERT_TRUE(printed["decision"].is_object()) << printed.dump(1);
  EXPECT_LT(printed["decision"]["cap_W"].get<double>(), 72.0);
  EXPECT_TRUE(printed["stored_as"].is_null());
  const std::string file = printed["store_failed"]["results_file"].get<std::string>();
  EXPECT_THAT(r.err, HasSubstr("is a folder, not a file; the results are kept in " + file));
  const json kept = json::parse(read_text(file));
  EXPECT_EQ(kept["kind"], "study");
  EXPECT_EQ(kept["report"]["decision"], printed["decision"]);
  EXPECT_EQ(kept["report"]["sweep"]["results"], printed["sweep"]["results"]);
  EXPECT_THAT(kept["table_csv"].get<std::string>(), HasSubstr("sim:cnn5,NVIDIA L4,"));
  // As text: the study's steps, its decision among them, then the failure.
  const RunResult text =
      regime({"study", "--device", "sim:l4", "--workload", "sim:cnn5", "--db", folder, "--quiet"});
  EXPECT_EQ(text.status, 7);
  EXPECT_THAT(text.out, HasSubstr("3. decision: "));
  EXPECT_THAT(text.out, HasSubstr("not kept in the run database: run database " + folder +
                                  " is a folder, not a file; the results are kept in "));
  // A study whose store works leaves no file behind: the store holds the results.
  ASSERT_EQ(regime({"study", "--device", "sim:l4", "--workload", "sim:cnn5", "--quiet"}).status, 0);
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(sb_.state_dir() / "results"))
    files += f.is_regular_file();
  EXPECT_EQ(files, 2u) << "the two failed studies' files, and no other";
}

}  // namespace
}  // namespace regime::test
