// The study's cap findings through `regime sweep` on simulated GPUs (docs/paper.md): on the T4 60 W
// is never the energy choice; on the L4 a lower cap saves. (The sim T4 and L4 are calibrated to
// these findings: docs/twin.md.)
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "twin/model.hpp"
#include "twin/sim_workloads.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kCnns = {"resnet50", "vgg16", "mobilenet_v2", "densenet121",
                                        "resnet18_cifar"};

json sweep(const std::string& device, const std::string& workload, const std::string& strategy,
           const std::string& mode = "live") {
  const test::TempDir dir("regime-plan-sim");
  auto r = test::run({"sweep", "--device", device, "--workload", "sim:" + workload, "--strategy",
                      strategy, "--mode", mode, "--json"},
                     {{"REGIME_STATE_DIR", (dir / "state").string()}}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  return json::parse(r.out);
}

TEST(SweepSimCli, OnT4SixtyWattsIsNeverChosenForEnergy) {
  const twin::GpuSpec t4 = twin::load_gpu_spec("t4");
  for (const auto& w : kCnns)
    for (const std::string strategy : {"exhaustive", "adaptive"}) {
      auto j = sweep("sim:t4", w, strategy);
      EXPECT_NE(j["decision"]["cap_W"].get<double>(), 60.0) << w << " " << strategy;
      // Where the twin's steady curve puts 60 W clearly above 70 W (VGG-16, ResNet-50,
      // DenseNet-121: +5.5 % to +9.8 %; the study saw up to +11.7 %), the measured 60 W row
      // must cost more too. MobileNetV2 (+0.3 %) and the input-bound ResNet-18 (-1.9 %) lie
      // within the sweep's noise of 70 W: there only the decision above is asserted.
      const auto p = twin::workload_on(twin::sim_workload_profile(w), t4);
      const double twin_rise =
          twin::steady_state(t4, p, 60).energy_J / twin::steady_state(t4, p, 70).energy_J - 1;
      if (strategy == "exhaustive" && twin_rise > 0.03) {
        double e60 = 0, e70 = 0;
        for (const auto& r : j["results"]) {
          if (r["cap_W"] == 60.0) e60 = r["energy_per_step_J"];
          if (r["cap_W"] == 70.0) e70 = r["energy_per_step_J"];
        }
        EXPECT_GT(e60, e70) << w;
      }
    }
}

TEST(SweepSimCli, OnL4ALowerCapIsChosen) {
  for (const auto& w : kCnns)
    for (const std::string strategy : {"exhaustive", "adaptive"}) {
      auto j = sweep("sim:l4", w, strategy);
      EXPECT_FALSE(j["decision"]["keep_default"].get<bool>()) << w << " " << strategy;
      EXPECT_LT(j["decision"]["cap_W"].get<double>(), 72.0) << w << " " << strategy;
      EXPECT_LT(j["decision"]["energy_change_pct"].get<double>(), 0) << w << " " << strategy;
    }
}

TEST(SweepSimCli, RestartModeAgreesWithLiveOnTheT4) {
  auto live = sweep("sim:t4", "resnet50", "exhaustive", "live");
  auto restart = sweep("sim:t4", "resnet50", "exhaustive", "restart");
  EXPECT_EQ(live["decision"]["cap_W"], restart["decision"]["cap_W"]);
  ASSERT_EQ(live["results"].size(), restart["results"].size());
  for (size_t i = 0; i < live["results"].size(); ++i)
    EXPECT_NEAR(live["results"][i]["energy_per_step_J"].get<double>(),
                restart["results"][i]["energy_per_step_J"].get<double>(),
                0.03 * live["results"][i]["energy_per_step_J"].get<double>());
}

}  // namespace
}  // namespace regime

namespace regime {
namespace {

// --quiet: the result on stdout, no progress on stderr while it runs (no line per cap, only
// warnings); without it, a line per cap.
TEST(SweepSimCli, QuietPrintsNothingOnStderrWhileItRuns) {
  const test::TempDir dir("regime-quiet");
  const test::Env env = {{"REGIME_STATE_DIR", (dir / "state").string()}};
  for (const char* command : {"sweep", "study"}) {
    auto quiet = test::run({command, "--device", "sim:l4", "--workload", "sim:resnet50", "--quiet"},
                           env, dir);
    EXPECT_EQ(quiet.status, 0) << quiet.err;
    // Warnings may remain ("regime: the card was still heating ..."); no progress, no probe lines.
    EXPECT_EQ(("\n" + quiet.err).find("\nprobe "), std::string::npos)
        << command << ": " << quiet.err;
    EXPECT_EQ(quiet.err.find('\r'), std::string::npos) << command;
    EXPECT_NE(quiet.out.find("decision"), std::string::npos) << quiet.out;
    auto loud = test::run({command, "--device", "sim:l4", "--workload", "sim:resnet50"}, env, dir);
    EXPECT_NE(("\n" + loud.err).find("\nprobe "), std::string::npos) << command << ": " << loud.err;
  }
}

// An adaptive sweep names its curve: on the A100, whose twin constants are estimates, it says the
// twin is relied on less; on the V100 (calibrated across its range) it does not; an exhaustive
// sweep predicts nothing and names no curve.
TEST(SweepSimCli, AnAdaptiveSweepSaysHowFarItTrustsItsCurve) {
  const json a100 = sweep("sim:a100", "resnet50", "adaptive");
  EXPECT_EQ(a100["curve"]["model"], "twin");
  EXPECT_EQ(a100["curve"]["gpu_spec"], "a100");
  EXPECT_FALSE(a100["curve"]["spec_calibrated"].get<bool>());
  EXPECT_GT(a100["curve"]["interval_extra_pct"].get<double>(), 0.0);
  const json v100 = sweep("sim:v100", "resnet50", "adaptive");
  EXPECT_TRUE(v100["curve"]["spec_calibrated"].get<bool>());
  EXPECT_EQ(v100["curve"]["interval_extra_pct"].get<double>(), 0.0);
  EXPECT_FALSE(sweep("sim:v100", "resnet50", "exhaustive").contains("curve"));

  const test::TempDir dir("regime-curve-note");
  auto text = test::run({"sweep", "--device", "sim:a100", "--workload", "sim:resnet50"},
                        {{"REGIME_STATE_DIR", (dir / "state").string()}}, dir);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("curve: the twin of a100 fitted to the probes, relied on less"),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace regime
