// Results kept: a sweep's table written with --table-out and the same sweep kept in the run
// database decide alike under other objectives; decisions and studies are kept with what they
// were made with; a study of several simulated GPUs prints one table.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime::test {
namespace {

using nlohmann::json;

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

}  // namespace
}  // namespace regime::test
