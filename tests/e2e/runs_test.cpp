// Sweeps and studies are kept in the run database and decided again under another objective
// without running again: `regime runs`, `regime recommend --run sweep:ID`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "store/run_store.hpp"
#include "support/sandbox.hpp"

namespace regime::test {
namespace {

using nlohmann::json;

class RunsCli : public ::testing::Test {
 protected:
  RunResult regime(const std::vector<std::string>& args) { return sb_.regime(args); }
  json regime_json(const std::vector<std::string>& args) { return sb_.regime_json(args); }
  Sandbox sb_;
};

TEST_F(RunsCli, ASweepIsKeptAndDecidedAgainUnderAnotherObjective) {
  json swept = regime_json({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50",
                            "--strategy", "exhaustive", "--caps", "72,68,64,60", "--json"});
  ASSERT_EQ(swept["stored_as"], "sweep:1");
  double chosen_W = swept["decision"]["cap_W"];
  EXPECT_LT(chosen_W, 72.0);  // the L4 saves energy under a lower cap

  json listed = regime_json({"runs", "--json"});
  ASSERT_EQ(listed["sweeps"].size(), 1u);
  EXPECT_EQ(listed["sweeps"][0]["run"], "sweep:1");
  EXPECT_EQ(listed["sweeps"][0]["kind"], "sweep");
  EXPECT_EQ(listed["sweeps"][0]["decision"]["cap_W"], chosen_W);

  // The same rule on the kept rows gives the same cap, and nothing runs again.
  json again = regime_json({"recommend", "--run", "sweep:1", "--json"});
  ASSERT_EQ(again["workloads"].size(), 1u);
  EXPECT_EQ(again["workloads"][0]["decision"]["cap_W"], chosen_W);
  EXPECT_EQ(regime_json({"runs", "--json"})["sweeps"].size(), 1u);

  // A tight slowdown bound: the cap it picks is no more than 2% slower than the default.
  json bounded =
      regime_json({"recommend", "--run", "sweep:1", "--objective", "max-slowdown:2", "--json"});
  EXPECT_LE(bounded["workloads"][0]["decision"]["time_change_pct"].get<double>(), 2.0);

  RunResult shown = regime({"runs", "show", "sweep:1"});
  EXPECT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("workload,gpu,cap_W,time_s,avg_power_W,unit"), std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find(",60,"), std::string::npos) << shown.out;
}

// A store of several machines' rows (a cluster's server store) lists the machine of each row; a
// store of one machine's rows shows no such column.
TEST_F(RunsCli, RowsFromSeveralMachinesNameTheirHost) {
  const std::string db = (sb_.state_dir() / "cluster.sqlite").string();
  ASSERT_EQ(regime({"sweep", "--device", "sim:l4", "--workload", "sim:resnet50", "--caps", "72,64",
                    "--strategy", "exhaustive", "--db", db, "--quiet"})
                .status,
            0);
  RunResult one = regime({"runs", "--db", db});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out.find("HOST"), std::string::npos) << one.out;

  {
    RunStore store(db);
    SweepRecord other;
    other.device = "nvml:0";
    other.gpu_name = "NVIDIA H200";
    other.workload = "bert";
    other.kind = "sweep";
    other.provenance.host = "node-b";
    other.decision = {{"cap_W", 450}, {"keep_default", false}};
    store.insert_sweep(other);
  }
  char here[256] = {};
  ::gethostname(here, sizeof here - 1);
  RunResult two = regime({"runs", "--db", db});
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("HOST"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("node-b"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find(here), std::string::npos) << two.out;
}

TEST_F(RunsCli, AStudysSweepIsKeptToo) {
  json study = regime_json({"study", "--device", "sim:l4", "--workload", "sim:resnet50",
                            "--probe-seconds", "30", "--json"});
  ASSERT_TRUE(study["stored_as"].is_string()) << study.dump(2);
  json listed = regime_json({"runs", "--json"});
  ASSERT_EQ(listed["sweeps"].size(), 1u);
  EXPECT_EQ(listed["sweeps"][0]["kind"], "study");
  EXPECT_EQ(listed["sweeps"][0]["run"], study["stored_as"]);
}

TEST_F(RunsCli, EveryKindIsListedShownAndFilteredByGpuAndWorkload) {
  regime_json({"study", "--device", "sim:l4", "--workload", "sim:resnet50", "--probe-seconds", "30",
               "--json"});
  regime_json(
      {"probe", "--device", "sim:t4", "--workload", "sim:vgg16", "--seconds", "20", "--json"});
  json control =
      regime_json({"control", "--device", "sim:h200,ambient_C=30,cooling=2", "--workload",
                   "sim:resnet50", "--policy", "thermal", "--seconds", "60", "--json"});
  ASSERT_EQ(control["stored_as"], "control:1") << control.dump(2);

  json all = regime_json({"runs", "--json"});
  EXPECT_EQ(all["probes"].size(), 1u);  // the T4 probe (a study keeps its probe in its own row)
  EXPECT_EQ(all["sweeps"].size(), 1u);
  EXPECT_EQ(all["studies"].size(), 1u);
  EXPECT_EQ(all["decisions"].size(), 1u);  // the study's sweep decided
  EXPECT_EQ(all["control_runs"].size(), 1u);
  EXPECT_EQ(all["studies"][0]["regime"], "cap-bound");
  EXPECT_EQ(all["decisions"][0]["source"], "study");
  EXPECT_EQ(all["control_runs"][0]["policy"], "thermal");

  // --gpu matches the GPU's name or URI, --workload the workload, in any case.
  json l4 = regime_json({"runs", "list", "--gpu", "l4", "--json"});
  EXPECT_EQ(l4["probes"].size(), 0u);
  EXPECT_EQ(l4["studies"].size(), 1u);
  EXPECT_EQ(l4["control_runs"].size(), 0u);
  json vgg = regime_json({"runs", "--workload", "VGG", "--json"});
  EXPECT_EQ(vgg["probes"].size(), 1u);
  EXPECT_EQ(vgg["probes"][0]["gpu"], "Tesla T4");
  EXPECT_EQ(vgg["sweeps"].size(), 0u);
  json h200 = regime_json({"runs", "--gpu", "sim:h200", "--workload", "resnet50", "--json"});
  EXPECT_EQ(h200["control_runs"].size(), 1u);
  EXPECT_EQ(h200["studies"].size(), 0u);

  // Each kind shown in full.
  const std::string study_id = all["studies"][0]["run"];
  EXPECT_TRUE(regime_json({"runs", "show", study_id, "--json"})["report"].is_object());
  const std::string decision_id = all["decisions"][0]["run"];
  json d = regime_json({"runs", "show", decision_id, "--json"});
  EXPECT_EQ(d["source"], "study");
  EXPECT_FALSE(d["provenance"]["regime_version"].get<std::string>().empty());
  json c = regime_json({"runs", "show", "control:1", "--json"});
  EXPECT_FALSE(c["report"]["actions"].empty());
  RunResult text = regime({"runs"});
  EXPECT_NE(text.out.find("control:1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(study_id), std::string::npos) << text.out;
  // A header row names the columns.
  EXPECT_NE(text.out.find("RESULT       WHEN (UTC)"), std::string::npos) << text.out;
  // `runs show` is text by default: one field a line and the advice, the record with --json.
  RunResult shown_study = regime({"runs", "show", study_id});
  EXPECT_EQ(shown_study.status, 0) << shown_study.err;
  EXPECT_NE(shown_study.out.find("regime:"), std::string::npos) << shown_study.out;
  EXPECT_NE(shown_study.out.find("add --json"), std::string::npos) << shown_study.out;
  EXPECT_EQ(shown_study.out.find('{'), std::string::npos) << shown_study.out;
  RunResult none = regime({"runs", "show", "control:7"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no control:7 in"), std::string::npos) << none.err;
}

// A read command given a --db that is not there says so, and creates nothing.
TEST_F(RunsCli, AMistypedDbIsNamedAndNothingIsCreated) {
  namespace fs = std::filesystem;
  const fs::path typo = fs::path(::testing::TempDir()) / "no-such-folder" / "runs.sqlite";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"runs", "--db", typo.string()},
        std::vector<std::string>{"runs", "--db", typo.string(), "show", "probe:1"}}) {
    RunResult r = regime(args);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.err.find("no run database at " + typo.string()), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(typo.parent_path()));
}

TEST_F(RunsCli, UnknownOrWrongRunsAreNamed) {
  // Nothing kept yet: the database itself is named as missing (the sweep is named once one
  // exists: EveryKindIsListedShownAndFilteredByGpuAndWorkload).
  RunResult none = regime({"recommend", "--run", "sweep:9"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no run database at"), std::string::npos) << none.err;
  RunResult probe = regime({"recommend", "--run", "probe:1"});
  EXPECT_EQ(probe.status, 2);
  EXPECT_NE(probe.err.find("--run takes a kept sweep"), std::string::npos) << probe.err;
  RunResult bogus = regime({"runs", "show", "sweep:x"});
  EXPECT_EQ(bogus.status, 2);
  EXPECT_NE(bogus.err.find("expected ID, probe:ID, sweep:ID, study:ID, decision:ID or control:ID"),
            std::string::npos)
      << bogus.err;
  RunResult neither = regime({"recommend"});
  EXPECT_EQ(neither.status, 2);
  EXPECT_NE(neither.err.find("give --sweep FILE or --run sweep:ID"), std::string::npos)
      << neither.err;
}

}  // namespace
}  // namespace regime::test
