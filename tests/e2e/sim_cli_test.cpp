// End-to-end: the real regime binary, `sim curve` and `sim fit`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun run_regime(const std::string& args) {
  std::string cmd = std::string(REGIME_BINARY) + " " + args + " 2>&1";
  CliRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int st = pclose(pipe);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(SimCli, SimCurveJsonContract) {
  CliRun r = run_regime("sim curve --gpu T4 --workload resnet50 --caps 60,64,70 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu"], "t4");
  EXPECT_EQ(j["workload"], "resnet50");
  ASSERT_EQ(j["points"].size(), 3u);
  for (const auto& p : j["points"])
    for (const char* k : {"cap_W", "time_s", "avg_power_W", "energy_J", "sm_MHz", "temp_C"})
      EXPECT_TRUE(p.contains(k)) << k;
  EXPECT_NEAR(j["points"][2]["avg_power_W"].get<double>(), 70, 1);
}

// sim:h200 is calibrated at 700 W only: its 245 W figure is marked extrapolated, with an interval
// that grew with the distance; the 700 W one is not.
TEST(SimCli, SimCurveMarksExtrapolatedFigures) {
  CliRun r = run_regime("sim curve --gpu h200 --workload resnet50 --caps 245,700 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["calibrated_caps_W"], nlohmann::json::array({700.0}));
  const auto& far = j["points"][0];
  const auto& near = j["points"][1];
  EXPECT_TRUE(far["extrapolated"].get<bool>());
  EXPECT_FALSE(near["extrapolated"].get<bool>());
  EXPECT_GT(far["half_width_pct"].get<double>(), 3 * near["half_width_pct"].get<double>());
  EXPECT_DOUBLE_EQ(far["distance_from_calibrated_W"].get<double>(), 455);
  const double e = far["energy_J"].get<double>();
  EXPECT_LT(far["energy_interval_J"][0].get<double>(), e);
  EXPECT_GT(far["energy_interval_J"][1].get<double>(), e);
  r = run_regime("sim curve --gpu h200 --workload resnet50 --caps 245,700");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("* extrapolated: outside the caps the h200 twin was calibrated at (700 W)"),
            std::string::npos)
      << r.out;
}

TEST(SimCli, SimCurveErrors) {
  CliRun r = run_regime("sim curve --gpu t4 --workload resnet50 --caps 50");
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find("(60-70 W)"), std::string::npos) << r.out;
  r = run_regime("sim curve --gpu t4 --workload nope --caps 60");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("resnet18_cifar"), std::string::npos) << r.out;
}

TEST(SimCli, SimFitJsonContract) {
  CliRun r = run_regime("sim fit --sweep " + std::string(REGIME_TEST_DATA_DIR) +
                        "/zeus/V100.sweep.csv --fit-caps 3 --json");
  ASSERT_EQ(r.status, 0) << r.out.substr(0, 2000);
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["workloads"].size(), 68u);
  for (const char* k : {"workload", "gpu", "fit_caps", "mape_energy_pct", "mape_time_pct",
                        "predicted_best_cap_W", "measured_best_cap_W"})
    EXPECT_TRUE(j["workloads"][0].contains(k)) << k;
  EXPECT_LE(j["median_mape_energy_pct"].get<double>(), 3.0);
}

}  // namespace
