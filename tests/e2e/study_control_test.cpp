// regime study and dynamic control: on a thermal-bound pair the study runs the gated controller's
// evaluation and reports both arms, the changes and the verdict (text and JSON); on any other pair
// it says the controller was not engaged and why, and runs nothing more.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class StudyControl : public ::testing::Test {
 protected:
  test::Sandbox sb_;
};

TEST_F(StudyControl, OnAThermalBoundPairTheGatedControllerIsEvaluated) {
  const std::vector<std::string> args = {"study", "--device", "sim:h200,ambient_C=30,cooling=2",
                                         "--workload", "sim:resnet50"};
  auto r = sb_.regime(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("control (regime-gated, thermal inside): engaged: thermal-bound"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("7 interleaved windows of 120 s on one run (1020 s)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("   verdict: helps\n"), std::string::npos) << r.out;

  std::vector<std::string> j_args = args;
  j_args.push_back("--json");
  auto rj = sb_.regime(j_args);
  ASSERT_EQ(rj.status, 0) << rj.err;
  json j = json::parse(rj.out);
  const json& c = j["control"];
  EXPECT_EQ(j["regime"]["regime"], "thermal-bound");
  EXPECT_EQ(c["policy"], "regime-gated");
  EXPECT_TRUE(c["engaged"].get<bool>());
  EXPECT_EQ(c["verdict"], "helps");
  EXPECT_LT(c["energy_change_ci_pct"][1].get<double>(), -3);
  for (const char* arm : {"baseline", "controlled"})
    EXPECT_EQ(c[arm]["energy_per_step_ci_J"].size(), 2u) << c.dump(2);
  EXPECT_EQ(c["limit_after_W"].get<double>(), 700);
}

TEST_F(StudyControl, OnACapBoundPairItSaysWhyControlWasNotEngaged) {
  auto r = sb_.regime({"study", "--device", "sim:t4", "--workload", "sim:vgg16", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json c = json::parse(r.out)["control"];
  EXPECT_FALSE(c["engaged"].get<bool>());
  EXPECT_EQ(c["reason"],
            "cap-bound: the firmware already holds power at the limit; temperature control "
            "cannot lower energy per step");
  EXPECT_TRUE(c["skipped_reason"].is_null());
  EXPECT_FALSE(c.contains("verdict"));  // nothing was evaluated
  EXPECT_NE(c["command"].get<std::string>().find("--policy regime-gated --evaluate"),
            std::string::npos);
}

// Under REGIME_READ_ONLY the evaluation (it changes the limit) is not run; the study says so and
// prints the command.
TEST_F(StudyControl, ReadOnlySkipsTheEvaluationAndPrintsTheCommand) {
  sb_.env["REGIME_READ_ONLY"] = "1";
  auto r = sb_.regime({"study", "--device", "sim:h200,ambient_C=30,cooling=2", "--workload",
                       "sim:resnet50", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json c = json::parse(r.out)["control"];
  EXPECT_FALSE(c["engaged"].get<bool>());
  EXPECT_NE(c["skipped_reason"].get<std::string>().find("REGIME_READ_ONLY"), std::string::npos);
  EXPECT_NE(c["skipped_reason"].get<std::string>().find("regime control --device"),
            std::string::npos);
}

}  // namespace
}  // namespace regime
