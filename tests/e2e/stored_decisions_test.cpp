// Stored data is input: `regime job begin --power auto` (the Slurm prolog) decides from the newest
// kept sweep of the GPU model and workload, in a local file or the store every node shares. A row
// that cannot be used, whatever it holds, is skipped with its reason on stderr and in the JSON,
// and the job runs with its limits as they are: exit 0, never a failed prolog (which drains the
// node).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "mariadb/test_server.hpp"
#include "store/run_store.hpp"
#include "support/sandbox.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kWorkload = "train.py";

// A row as a hostile writer leaves it: the decision_json text, or SQL run on the new row.
struct HostileRow {
  std::string name;
  std::string decision_json;  // stored as this text
  std::string extra_sql;      // then this, with ID replaced by the row's id (may be empty)
  std::string reason;         // what the skipped row's reason says
};

std::vector<HostileRow> hostile_rows() {
  // Nesting that would run a recursive walk (dump, destruction) off the end of the stack.
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  return {
      {"nested 100,000 levels deep", deep, "", "its decision_json nests deeper than 64 levels"},
      {"a cap nested 100,000 levels deep", R"({"keep_default":false,"cap_W":)" + deep + "}", "",
       "its decision_json nests deeper than 64 levels"},
      {"a string cap", R"({"keep_default":false,"cap_W":"300"})", "",
       "cap_W is a string (\"300\"), not a number"},
      {"a null cap", R"({"keep_default":false,"cap_W":null})", "", "cap_W is null, not a number"},
      {"no cap", R"({"keep_default":false})", "", "cap_W is missing"},
      {"a cap in an array", R"({"keep_default":false,"cap_W":[300]})", "",
       "cap_W is an array ([300]), not a number"},
      {"keep_default as text", R"({"keep_default":"false","cap_W":300})", "",
       "keep_default is a string (\"false\"), not true or false"},
      {"no keep_default", R"({"cap_W":300})", "", "its decision has no keep_default"},
      {"a figure of the wrong type", R"({"keep_default":false,"cap_W":300,"time_change_pct":{}})",
       "", "time_change_pct is an object ({}), not a number"},
      {"an array", "[300]", "", "its decision is an array ([300]), not an object"},
      {"a bare number", "300", "", "its decision is a number (300), not an object"},
      {"a JSON string", R"("cap 300 W")", "",
       "its decision is a string (\"cap 300 W\"), not an object"},
      {"text that is not JSON", R"({"keep_default":false,"cap_W":)", "",
       "its decision_json is not JSON text"},
      {"NaN", R"({"keep_default":false,"cap_W":NaN})", "", "its decision_json is not JSON text"},
      {"a cap that overflows", R"({"keep_default":false,"cap_W":1e999})", "",
       "its decision_json is not JSON text"},
      {"a cap under the range", R"({"keep_default":false,"cap_W":150})", "",
       "cap 150 W is outside the range of nvml:0 (200-700 W)"},
      {"a cap over the range", R"({"keep_default":false,"cap_W":1e9})", "",
       "cap 1e+09 W is outside the range of nvml:0 (200-700 W)"},
      {"a column of the wrong kind", R"({"keep_default":false,"cap_W":300})",
       "UPDATE sweeps SET max_limit_W = 'lots' WHERE id = ID",
       "sweeps row ID: column max_limit_W: 'lots' is not a number"},
      {"control characters in the cap", "{\"keep_default\":false,\"cap_W\":\"\\u001b[2J\\n\"}", "",
       "cap_W is a string (\"\\u001b[2J\\n\"), not a number"},
  };
}

class HostileStoredDecision : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(nlohmann::json::parse(R"({"gpus": [
      {"name": "NVIDIA H200", "uuid": "GPU-auto-0", "min_limit_W": 200, "max_limit_W": 700,
       "default_limit_W": 700, "idle_W": 80, "demand_W": 690}]})"));
    sb_.env["REGIME_AGENT_SOCKET"] = (sb_.path() / "no-agent.sock").string();
  }
  std::string db() const { return (sb_.path() / "runs.sqlite").string(); }

  // A kept sweep of this GPU model and workload (the newest, so the one auto decides from).
  int64_t keep_sweep(const std::string& db_uri, const nlohmann::json& decision) {
    RunStore store(db_uri);
    SweepRecord s;
    s.gpu_name = "NVIDIA H200";
    s.workload = kWorkload;
    s.table_csv = "t";
    s.decision = decision;
    return store.insert_sweep(s);
  }
  void sql(const std::string& statement) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(h, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << statement << ": " << sqlite3_errmsg(h);
    sqlite3_close(h);
  }
  RunResult job(const std::string& op, const std::string& id, const std::string& db_uri,
                std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"job", op, "--job", id, "--node", "n1", "--db", db_uri};
    args.insert(args.end(), more.begin(), more.end());
    return sb_.regime(args);
  }
  RunResult begin_auto(const std::string& id, const std::string& db_uri) {
    return job("begin", id, db_uri,
               {"--gpus", "0", "--power", "auto", "--workload", kWorkload, "--json"});
  }
  // job begin ran, left the limit as it was, and said why in both places.
  void expect_skipped(const RunResult& begin, int64_t sweep_id, const std::string& reason,
                      const std::string& what) {
    EXPECT_EQ(begin.status, 0) << what << ": " << begin.err;
    EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-auto-0", 700), 700) << what;
    EXPECT_FALSE(sb_.journaled()) << what;
    EXPECT_THAT(begin.err, HasSubstr("the kept sweep:" + std::to_string(sweep_id) +
                                     " of 'train.py' on NVIDIA H200 was skipped: " + reason))
        << what;
    const nlohmann::json r = nlohmann::json::parse(begin.out, nullptr, false);
    ASSERT_TRUE(r.is_object()) << what << ": " << begin.out;
    ASSERT_EQ(r["skipped_rows"].size(), 1u) << what << ": " << r.dump(1);
    EXPECT_EQ(r["skipped_rows"][0]["sweep_id"], sweep_id) << what;
    EXPECT_THAT(r["skipped_rows"][0]["reason"].get<std::string>(), HasSubstr(reason)) << what;
    EXPECT_TRUE(r["gpus"][0]["cap_W"].is_null()) << what;
    EXPECT_FALSE(r["gpus"][0].contains("enforced_W")) << what;
  }
  Sandbox sb_;
};

TEST_F(HostileStoredDecision, EachHostileRowIsSkippedWithItsReasonAndTheJobRunsUnchanged) {
  // First a whole row: the setup can cap, so a cap left off below is the check's doing.
  keep_sweep(db(), {{"keep_default", false}, {"cap_W", 450}, {"energy_change_pct", -8.3}});
  RunResult good = begin_auto("10", db());
  ASSERT_EQ(good.status, 0) << good.err;
  EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-auto-0"), 450);
  ASSERT_EQ(job("end", "10", db()).status, 0);
  EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-auto-0"), 700);

  int n = 10;
  for (const HostileRow& row : hostile_rows()) {
    const int64_t id = keep_sweep(db(), {{"keep_default", true}});
    sql("UPDATE sweeps SET decision_json = '" + row.decision_json +
        "' WHERE id = " + std::to_string(id));
    if (!row.extra_sql.empty()) {
      std::string statement = row.extra_sql;
      statement.replace(statement.find("ID"), 2, std::to_string(id));
      sql(statement);
    }
    std::string reason = row.reason;
    if (const size_t at = reason.find("ID"); at != std::string::npos)
      reason.replace(at, 2, std::to_string(id));
    const std::string job_id = std::to_string(++n);
    expect_skipped(begin_auto(job_id, db()), id, reason, row.name);
    RunResult end = job("end", job_id, db());
    EXPECT_EQ(end.status, 0) << row.name << ": " << end.err;
  }
}

// A run database that cannot be read at all (corrupt, a folder where the file should be) leaves
// the job's limits as they are with the reason: the prolog never fails on it.
TEST_F(HostileStoredDecision, AnUnreadableStoreLeavesTheLimitsAndTheJobRuns) {
  test::write_text(db(), std::string(4096, 'x'));
  const RunResult corrupt = begin_auto("70", db());
  EXPECT_EQ(corrupt.status, 0) << corrupt.err;
  EXPECT_THAT(corrupt.err, HasSubstr("the run database could not be read"));
  EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-auto-0", 700), 700);
  EXPECT_EQ(job("end", "70", db()).status, 0);
  fs::remove(db());
  fs::create_directories(db());
  const RunResult folder = begin_auto("71", db());
  EXPECT_EQ(folder.status, 0) << folder.err;
  EXPECT_THAT(folder.err, HasSubstr("the run database could not be read"));
  EXPECT_THAT(folder.err, HasSubstr("is a folder, not a file"));
  EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-auto-0", 700), 700);
  EXPECT_EQ(job("end", "71", db()).status, 0);
}

// A --db the prolog cannot read (a malformed server URI in plugstack.conf) is taken as a store that
// cannot be read: the limits stay, the reason is said, neither the prolog nor the epilog fails. A
// command a person runs refuses it before it does anything.
TEST_F(HostileStoredDecision, AMalformedServerUriLeavesTheLimitsAndTheJobRuns) {
  const std::string bad = "mariadb://slurmdb.cluster/regime";
  const RunResult begin = begin_auto("80", bad);
  EXPECT_EQ(begin.status, 0) << begin.err;
  EXPECT_THAT(begin.err,
              HasSubstr("the run database could not be read: --db " + bad + ": no user"));
  EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-auto-0", 700), 700);
  EXPECT_FALSE(sb_.journaled());
  const RunResult end = job("end", "80", bad);
  EXPECT_EQ(end.status, 0) << end.err;
  EXPECT_THAT(end.out,
              HasSubstr("nothing to undo (its run database could not be read: --db " + bad));
  const RunResult show = sb_.regime({"job", "show", "--job", "80", "--db", bad});
  EXPECT_EQ(show.status, 2) << show.out;
  EXPECT_THAT(show.err, HasSubstr("--db " + bad + ": no user (expected mariadb://USER@HOST"));
}

// The store every node shares (MariaDB): the same rows, read from the server, skipped the same.
TEST_F(HostileStoredDecision, AHostileRowInTheSharedStoreIsSkippedLikeALocalOne) {
  testing::MariaDbTestServer server;
  server.start(sb_.path() / "server");
  int n = 60;
  for (const HostileRow& row : hostile_rows()) {
    if (!row.extra_sql.empty()) continue;  // MariaDB's columns hold their own kind only
    // The admin client takes its statement as one argument, which these would overflow; the
    // rows are read through the same column reader as the local ones above.
    if (row.decision_json.size() > 4096) continue;
    const int64_t id = keep_sweep(server.uri(), {{"keep_default", true}});
    std::string text = row.decision_json;
    // The admin client takes the statement in double quotes: the row's own ones escaped.
    std::string quoted;
    for (char c : text)
      quoted += c == '"' ? std::string("\\\"") : c == '\\' ? "\\\\\\\\" : std::string(1, c);
    server.admin("UPDATE regime.sweeps SET decision_json = '" + quoted +
                 "' WHERE id = " + std::to_string(id));
    const std::string job_id = std::to_string(++n);
    expect_skipped(begin_auto(job_id, server.uri()), id, row.reason, row.name);
    EXPECT_EQ(job("end", job_id, server.uri()).status, 0) << row.name;
  }
  server.stop();
}

}  // namespace
}  // namespace regime::test
