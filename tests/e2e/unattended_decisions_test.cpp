// Decisions a user can leave unattended, run as a user would (the real binary, the fake NVML):
// the classifier says what the counters saw, a run too short to measure names no regime, a sweep
// without step markers refuses (or says "per second" everywhere when told to go on), the default
// objective bounds the slowdown, and no advice names a command that does not exist.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "store/run_store.hpp"
#include "support/sandbox.hpp"
#include "support/synthetic_trace.hpp"
#include "trace/csv.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class Unattended : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(nlohmann::json::parse(
        R"({"gpus": [{"name": "NVIDIA Fake GPU", "uuid": "GPU-fake-unattended",
                                    "min_limit_W": 100, "max_limit_W": 300, "default_limit_W": 300,
                                    "idle_W": 60, "demand_W": 250}]})"));
  }
  test::RunResult regime(const std::vector<std::string>& args) { return sb_.regime(args); }
  // The fake GPU's limit: its default (300 W) until something has been set.
  double limit_W() const { return sb_.fake_limit_W("GPU-fake-unattended", 300); }
  // A trace written to the scratch folder, with its steps beside it.
  fs::path write(const std::string& name, const Trace& t) {
    const fs::path p = sb_.path() / (name + ".trace.csv");
    write_trace_csv(p, t.samples);
    write_steps_csv(*sibling_steps_path(p), t.steps);
    return p;
  }
  test::Sandbox sb_;
};

// Section 3: a hot card held by its power cap (SW power cap 100% of the time, thermal 0%) is
// cap-bound, not thermal-bound, and is not told to try a thermal controller.
TEST_F(Unattended, AHotCardHeldByItsPowerCapIsCapBound) {
  synthetic::Spec s;
  s.temp_C = 87;  // 2 C under the H200's 89 C slowdown point
  s.sm_MHz = 1500;
  s.power_W = 695;
  s.reasons = reason::kSwPowerCap;
  const fs::path trace = write("hot_capped", synthetic::make(s));
  auto r = regime({"classify", "--trace", trace.string(), "--gpu-model", "h200", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["regime"], "cap-bound");
  EXPECT_EQ(j["evidence"]["sw_power_cap_time_pct"], 100.0);
  EXPECT_EQ(j["evidence"]["thermal_time_pct"], 0.0);
  EXPECT_THAT(j["evidence"]["rule"].get<std::string>(),
              HasSubstr("SW power cap active 100% of the time"));
  EXPECT_THAT(j["advice"].get<std::string>(), HasSubstr("A thermal controller cannot help"));
  EXPECT_THAT(j["advice"].get<std::string>(), Not(HasSubstr("try the controller")));
}

// Section 3: a card at 98% of its limit with the power cap active 41% of the time is headroom,
// borderline with cap-bound, and the text names the cap and says what it means for a cap.
TEST_F(Unattended, APartlyCappedCardIsCalledBorderlineAndTheCapIsNamed) {
  synthetic::Spec s;
  s.power_W = 686;  // 98% of 700 W
  s.sm_MHz = 1980;
  Trace t = synthetic::make(s);
  // The cap acts in 41% of the samples (every 100 samples, the first 41).
  for (size_t i = 0; i < t.samples.size(); ++i)
    t.samples[i].reasons = i % 100 < 41 ? reason::kSwPowerCap : 0;
  const fs::path trace = write("partly_capped", t);
  auto r = regime({"classify", "--trace", trace.string(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["regime"], "headroom");
  EXPECT_EQ(j["evidence"]["borderline_with"], "cap-bound");
  EXPECT_NEAR(j["evidence"]["limiting_reasons_pct"]["sw_power_cap"].get<double>(), 41, 1);
  const std::string rule = j["evidence"]["rule"].get<std::string>();
  EXPECT_THAT(rule, HasSubstr("borderline headroom / cap-bound"));
  EXPECT_THAT(rule, HasSubstr("sw_power_cap 41%"));
  EXPECT_THAT(rule, Not(HasSubstr("no limiting reason,")));
  EXPECT_THAT(j["advice"].get<std::string>(),
              HasSubstr("a cap just under the 700 W limit binds more often and slows the work"));
  auto text = regime({"classify", "--trace", trace.string()});
  EXPECT_THAT(text.out, HasSubstr("regime: headroom (borderline with cap-bound, confidence"));
}

// Section 4: a command that exits before there is anything to measure gets no regime: the run is
// stored as failed, regime exits with the command's status, and the message says why.
TEST_F(Unattended, ACommandThatExitsAtOnceGetsNoRegime) {
  sb_.env["REGIME_READ_ONLY"] = "1";
  auto r = regime({"probe", "--device", "nvml:0", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no regime"));
  EXPECT_THAT(r.err, HasSubstr("the command ended before there was enough to measure"));
  EXPECT_THAT(r.out, Not(HasSubstr("regime: ")));
  const auto runs = RunStore(sb_.path() / "state" / "runs.sqlite").list();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "failed");
  EXPECT_EQ(runs[0].exit_status, 3);
  // Exiting 0 that early is no success either.
  auto ok = regime({"probe", "--device", "nvml:0", "--", "true"});
  EXPECT_EQ(ok.status, 1) << ok.err;
  EXPECT_THAT(ok.err, HasSubstr("no regime"));
}

// Section 4: without step markers a sweep cannot know the work done: it refuses, says how to add
// markers, and leaves the limit as it was. With --per-second it decides, and says "per second".
TEST_F(Unattended, ASweepWithoutStepMarkersRefusesUnlessToldToGoPerSecond) {
  const double before = limit_W();
  const std::vector<std::string> sweep = {"sweep",      "--device", "nvml:0",     "--actuate",
                                          "--caps",     "300,200",  "--strategy", "exhaustive",
                                          "--settle-s", "0.2",      "--probe-s",  "1"};
  auto args = sweep;
  args.insert(args.end(), {"--", "sleep", "100"});
  auto r = regime(args);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no step markers arrived from 'sleep 100'"));
  EXPECT_THAT(r.err, HasSubstr("with regime_step.step():"));
  EXPECT_THAT(r.err, HasSubstr("--step-regex"));
  EXPECT_THAT(r.err, HasSubstr("--per-second"));
  EXPECT_THAT(r.out, Not(HasSubstr("decision:")));
  EXPECT_EQ(limit_W(), before);

  auto per_second = sweep;
  per_second.insert(per_second.end(), {"--per-second", "--", "sleep", "100"});
  auto p = regime(per_second);
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("time/second s"));
  EXPECT_THAT(p.out, HasSubstr("energy/second J"));
  EXPECT_THAT(p.out, Not(HasSubstr("per step")));
  EXPECT_THAT(p.out, Not(HasSubstr("/step")));
  EXPECT_EQ(limit_W(), before);
  per_second.insert(per_second.end() - 3, "--json");
  auto pj = regime(per_second);
  ASSERT_EQ(pj.status, 0) << pj.err;
  EXPECT_EQ(nlohmann::json::parse(pj.out)["per"], "second");
}

// Section 4: the default objective keeps the slowdown within 10% on sim:h200 (energy alone took
// +58% time per step), and shows the unconstrained optimum and how to choose it.
TEST_F(Unattended, TheDefaultObjectiveBoundsTheSlowdown) {
  auto r = regime({"sweep", "--device", "sim:h200", "--workload", "sim:resnet50", "--strategy",
                   "exhaustive", "--caps", "700,560,420,280", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["objective"], "max-slowdown:10");
  EXPECT_LE(j["decision"]["time_change_pct"].get<double>(), 10);
  ASSERT_TRUE(j["decision"]["unconstrained"].is_object()) << j["decision"].dump();
  EXPECT_EQ(j["decision"]["unconstrained"]["how"], "--objective energy");
  EXPECT_GT(j["decision"]["unconstrained"]["time_change_pct"].get<double>(), 10);
  auto text = regime({"sweep", "--device", "sim:h200", "--workload", "sim:resnet50", "--strategy",
                      "exhaustive", "--caps", "700,560,420,280"});
  EXPECT_THAT(text.out, HasSubstr("choose it with --objective energy"));
}

// Section 4: every `regime X` that an output suggests is a command this binary has.
TEST_F(Unattended, AdviceNamesOnlyCommandsThatExist) {
  auto help = regime({"--help"});
  std::set<std::string> commands;
  const std::regex listed(R"(^\s+([a-z]+)\s)");
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, listed)) commands.insert(m[1]);
  }
  ASSERT_TRUE(commands.count("sweep")) << help.out;
  std::string outputs;
  synthetic::Spec hot;
  hot.reasons = reason::kSwThermal;
  hot.temp_C = 88;
  hot.sm_MHz = 1400;
  synthetic::Spec capped;
  capped.reasons = reason::kSwPowerCap;
  capped.power_W = 695;
  capped.sm_MHz = 1500;
  for (const auto& [name, spec] : std::vector<std::pair<std::string, synthetic::Spec>>{
           {"hot", hot}, {"capped", capped}, {"plain", synthetic::Spec{}}})
    outputs += regime({"classify", "--trace", write(name, synthetic::make(spec)).string()}).out;
  for (const char* w : {"sim:resnet50", "sim:resnet18_cifar"})
    outputs += regime({"study", "--device", "sim:t4", "--workload", w, "--probe-seconds", "30",
                       "--strategy", "adaptive"})
                   .out;
  sb_.env["REGIME_READ_ONLY"] = "1";
  auto study = regime({"study", "--device", "nvml:0", "--stop-after-decision", "--probe-seconds",
                       "2", "--step-regex", "step", "--", "sh", "-c",
                       "while true; do echo step; sleep 0.05; done"});
  outputs += study.out + study.err;
  const std::regex suggested(R"(\bregime ([a-z]+)\b)");
  int named = 0;
  for (auto it = std::sregex_iterator(outputs.begin(), outputs.end(), suggested);
       it != std::sregex_iterator(); ++it) {
    ++named;
    EXPECT_TRUE(commands.count((*it)[1])) << "`regime " << (*it)[1] << "` does not exist";
  }
  EXPECT_GT(named, 0) << outputs;  // the study prints the sweep command to run
}

}  // namespace
}  // namespace regime
