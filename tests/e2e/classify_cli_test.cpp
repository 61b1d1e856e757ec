// End-to-end: `regime classify` on the real H200 traces and on malformed input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"
#include "support/synthetic_trace.hpp"
#include "trace/csv.hpp"

namespace regime::test {
namespace {

using ::testing::HasSubstr;

std::string h200(const std::string& name) {
  return std::string(REGIME_TEST_DATA_DIR) + "/h200/" + name + ".trace.csv";
}

// One scratch directory for the whole suite (outputs of the binary, malformed inputs).
const std::filesystem::path& scratch_dir() {
  static const TempDir dir;
  return dir.path;
}

RunResult run_regime(const std::vector<std::string>& args) { return run(args, {}, scratch_dir()); }

nlohmann::json classify_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args{"classify", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const RunResult r = run_regime(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(ClassifyCli, TextReportOnGemmSaysCapBound) {
  const RunResult r = run_regime({"classify", "--trace", h200("gemm_bf16")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("regime: cap-bound"));
  EXPECT_THAT(r.out, HasSubstr("gemm_bf16.steps.csv (601 steps)"));  // sibling steps by default
  EXPECT_THAT(r.out, HasSubstr("energy per step   22.99 J"));
}

TEST(ClassifyCli, JsonContractOnTheThreeH200Traces) {
  const nlohmann::json gemm = classify_json({"--trace", h200("gemm_bf16")});
  const nlohmann::json r50 = classify_json({"--trace", h200("resnet50")});
  const nlohmann::json r18 = classify_json({"--trace", h200("resnet18_cifar")});
  EXPECT_EQ(gemm["regime"], "cap-bound");
  EXPECT_EQ(r50["regime"], "headroom");
  EXPECT_EQ(r18["regime"], "underutilized");
  EXPECT_NEAR(gemm["measurement"]["energy_per_step_J"].get<double>(), 22.99, 0.2299);
  EXPECT_NEAR(r50["measurement"]["energy_per_step_J"].get<double>(), 33.95, 0.3395);
  for (const auto& j : {gemm, r50, r18}) {
    EXPECT_GT(j["confidence"].get<double>(), 0.5);
    EXPECT_FALSE(j["advice"].get<std::string>().empty());
    EXPECT_TRUE(j["evidence"].is_object());
    const auto& m = j["measurement"];
    EXPECT_GT(m["steps"].get<int>(), 300);
    EXPECT_EQ(m["energy_source"], "counter");
    const auto ci = m["energy_per_step_ci_J"];
    EXPECT_LE(ci[0].get<double>(), m["energy_per_step_J"].get<double>());
    EXPECT_GE(ci[1].get<double>(), m["energy_per_step_J"].get<double>());
    EXPECT_EQ(m["time_per_step_ci_s"].size(), 2u);
    EXPECT_GT(m["avg_power_W"].get<double>(), 100);
  }
}

TEST(ClassifyCli, NoStepsAndFixedWarmup) {
  const nlohmann::json per_s = classify_json({"--trace", h200("resnet50"), "--no-steps"});
  EXPECT_EQ(per_s["measurement"]["per"], "second");
  EXPECT_EQ(per_s["measurement"]["steps"], 0);
  EXPECT_EQ(per_s["regime"], "headroom");
  const nlohmann::json warm = classify_json({"--trace", h200("resnet50"), "--warmup-s", "5"});
  EXPECT_NEAR(warm["measurement"]["warmup_dropped_s"].get<double>(), 5, 0.1);
}

TEST(ClassifyCli, TraceWithoutSiblingStepsIsMeasuredPerSecond) {
  const auto copy = scratch_dir() / "lonely.trace.csv";
  std::filesystem::copy_file(h200("resnet18_cifar"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  const nlohmann::json j = classify_json({"--trace", copy.string()});
  EXPECT_TRUE(j["inputs"]["steps"].is_null());
  EXPECT_EQ(j["measurement"]["per"], "second");
}

TEST(ClassifyCli, GpuModelSuppliesTheSlowdownThreshold) {
  // Hot (87 C) with clocks held at 1500 of 1980 MHz and no reason counters in the trace: only the
  // H200's 89 C slowdown threshold from data/gpus makes this thermal-bound.
  synthetic::Spec spec;
  spec.temp_C = 87;
  spec.sm_MHz = 1500;
  Trace t = synthetic::make(spec);
  for (auto& s : t.samples) s.reasons.reset();
  const auto path = scratch_dir() / "hot.trace.csv";
  write_trace_csv(path, t.samples);
  write_steps_csv(*sibling_steps_path(path), t.steps);
  const nlohmann::json plain = classify_json({"--trace", path.string(), "--max-sm-mhz", "1980"});
  EXPECT_NE(plain["regime"], "thermal-bound");
  const nlohmann::json with_model =
      classify_json({"--trace", path.string(), "--gpu-model", "h200"});
  EXPECT_EQ(with_model["regime"], "thermal-bound");
  EXPECT_EQ(with_model["evidence"]["slowdown_temp_C"], 89.0);
  EXPECT_THAT(with_model["evidence"]["rule"].get<std::string>(), HasSubstr("no reason counters"));
  const RunResult unknown =
      run_regime({"classify", "--trace", path.string(), "--gpu-model", "nosuchgpu"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("h200"));  // the known models are listed
}

TEST(ClassifyCli, MalformedTraceNamesFileLineColumnAndExitsTwo) {
  const auto bad = scratch_dir() / "bad.trace.csv";
  std::ofstream(bad) << "t_s,gpu,power_W,power_avg_W,energy_J,temp_C,sm_MHz,mem_MHz,util_pct,"
                        "limit_W,reasons\n"
                     << "1.0,0,100,100,5,40,1980,3201,50,700,0\n"
                     << "1.1,0,10O,100,6,40,1980,3201,50,700,0\n";
  const RunResult r = run_regime({"classify", "--trace", bad.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr(bad.string() + ":3:7: bad number '10O' in column power_W"));
  EXPECT_TRUE(r.out.empty());
}

TEST(ClassifyCli, MissingFilesAndBadOptions) {
  const RunResult missing = run_regime({"classify", "--trace", "/nonexistent.trace.csv"});
  EXPECT_EQ(missing.status, 7);  // I/O error
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent.trace.csv"));
  const RunResult steps =
      run_regime({"classify", "--trace", h200("resnet50"), "--steps", "/nonexistent.steps.csv"});
  EXPECT_EQ(steps.status, 7);
  const RunResult both = run_regime(
      {"classify", "--trace", h200("resnet50"), "--no-steps", "--steps", "/x.steps.csv"});
  EXPECT_NE(both.status, 0);
  const RunResult negative =
      run_regime({"classify", "--trace", h200("resnet50"), "--warmup-s", "-1"});
  EXPECT_NE(negative.status, 0);
}

}  // namespace
}  // namespace regime::test
