// regime study --workload-name NAME --auto: a later run of a studied workload trains at the kept
// decision from its first step (no probe, no search), to its end, through the real binary on a
// simulated GPU; a workload with no end of its own is refused before anything runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime {
namespace {

using ::testing::HasSubstr;

class StudyKept : public ::testing::Test {
 protected:
  test::RunResult study(const std::string& workload, bool use_kept) {
    std::vector<std::string> args = {"study",  "--device",        "sim:h200", "--workload",
                                     workload, "--workload-name", "trainA",   "--json"};
    if (use_kept) args.push_back("--auto");
    return sb_.regime(args);
  }
  test::Sandbox sb_;
};

TEST_F(StudyKept, ASecondRunTrainsAtTheKeptDecisionWithoutSearching) {
  const test::RunResult first = study("sim:gemm,steps=12000", false);
  ASSERT_EQ(first.status, 0) << first.err;
  const nlohmann::json a = nlohmann::json::parse(first.out);
  ASSERT_TRUE(a["decision"]["cap_W"].is_number()) << a.dump(1);
  const double cap_W = a["decision"]["cap_W"].get<double>();
  EXPECT_LT(cap_W, 700);

  const test::RunResult second = study("sim:gemm,steps=12000", true);
  ASSERT_EQ(second.status, 0) << second.err;
  const nlohmann::json b = nlohmann::json::parse(second.out);
  EXPECT_EQ(b["kept"]["cap_W"], cap_W) << b.dump(1);
  EXPECT_FALSE(b.contains("probe")) << "a kept run probes nothing";
  EXPECT_EQ(b["job"]["steps"], 12000) << "every step of the run is counted";
  EXPECT_EQ(b["job"]["cap_W"], cap_W);
  EXPECT_THAT(b["after"].get<std::string>(), HasSubstr("restored the original limit 700 W"));
}

TEST_F(StudyKept, NothingKeptStudiesAsUsualAndKeepsTheDecisionUnderTheName) {
  const test::RunResult r = study("sim:gemm,steps=12000", true);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.contains("kept"));
  EXPECT_TRUE(j["decision"]["cap_W"].is_number()) << j.dump(1);
  EXPECT_EQ(j["workload"], "trainA");
}

TEST_F(StudyKept, AWorkloadWithoutAnEndIsRefusedBeforeAnythingRuns) {
  ASSERT_EQ(study("sim:gemm,steps=12000", false).status, 0);
  const test::RunResult r = study("sim:gemm", true);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--auto runs the workload to its end at the kept cap"));
}

}  // namespace
}  // namespace regime
