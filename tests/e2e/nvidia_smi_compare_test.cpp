// scripts/nvidia_smi_compare.py (the comparison of scripts/h200_readonly_check.sh) on nvidia-smi
// output as driver 580 prints it on the H200: thresholds only as T.Limit margins.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "support/cli_run.hpp"

namespace regime {
namespace {

using test::TempDir;

constexpr const char* kLimitShow = R"({"current_limit_W": 700.0, "default_limit_W": 700.0,
  "enforced_limit_W": 700.0, "min_limit_W": 200.0, "max_limit_W": 700.0, "max_mem_MHz": 3201.0,
  "max_sm_MHz": 1980.0, "shutdown_temp_C": 95.0, "slowdown_temp_C": 89.0, "uuid": "GPU-x"})";

// Abridged `nvidia-smi -q -d POWER,TEMPERATURE,CLOCK`, driver 580 layout.
std::string smi_580(const std::string& temperature_lines) {
  return "==============NVSMI LOG==============\n\n"
         "Driver Version                            : 580.95.05\n"
         "GPU 00000000:19:00.0\n"
         "    GPU Power Readings\n"
         "        Average Power Draw                : 77.79 W\n"
         "        Current Power Limit               : 700.00 W\n"
         "        Requested Power Limit             : 700.00 W\n"
         "        Default Power Limit               : 700.00 W\n"
         "        Min Power Limit                   : 200.00 W\n"
         "        Max Power Limit                   : 700.00 W\n"
         "    Temperature\n"
         "        GPU Current Temp                  : 30 C\n" +
         temperature_lines +
         "    Clocks\n"
         "        SM                                : 345 MHz\n"
         "        Memory                            : 3201 MHz\n"
         "    Max Clocks\n"
         "        SM                                : 1980 MHz\n"
         "        Memory                            : 3201 MHz\n";
}

const std::string kMargins =
    "        GPU T.Limit Temp                  : 57 C\n"
    "        GPU Shutdown T.Limit Temp         : -8 C\n"
    "        GPU Slowdown T.Limit Temp         : -2 C\n";

struct Compared {
  int status = -1;
  std::string out;
};

Compared compare(const TempDir& dir) {
  std::string cmd =
      "python3 " REGIME_SOURCE_DIR "/scripts/nvidia_smi_compare.py " + dir.path.string() + " 2>&1";
  Compared c;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return c;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) c.out.append(buf, n);
  c.status = test::decode_status(::pclose(p));
  return c;
}

TEST(NvidiaSmiCompare, Driver580MarginsAreSaidPlainlyAndNotComparedNorCountedAsMismatches) {
  TempDir dir;
  test::write_text(dir.path / "limit_show.json", kLimitShow);
  test::write_text(dir.path / "nvidia-smi.txt", smi_580(kMargins));
  Compared c = compare(dir);
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_EQ(c.out.find("None"), std::string::npos) << c.out;
  EXPECT_EQ(c.out.find("NO"), std::string::npos) << c.out;
  EXPECT_NE(
      c.out.find("slowdown_temp_C          89.0            -  not compared: nvidia-smi "
                 "580.95.05 reports only the T.Limit margin (GPU Slowdown T.Limit Temp : -2 C)"),
      std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("(GPU Shutdown T.Limit Temp : -8 C)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("max_sm_MHz"), std::string::npos);
  EXPECT_NE(c.out.find("all compared fields match (2 not comparable"), std::string::npos) << c.out;
}

TEST(NvidiaSmiCompare, AbsoluteThresholdsFromTheQueryFieldsAreCompared) {
  TempDir dir;
  test::write_text(dir.path / "limit_show.json", kLimitShow);
  test::write_text(dir.path / "nvidia-smi.txt", smi_580(kMargins));
  test::write_text(dir.path / "nvidia-smi-temp-query.csv",
                   "temperature.gpu, temperature.gpu.slowdown, temperature.gpu.shutdown\n"
                   "30, 89, 97\n");
  Compared c = compare(dir);
  EXPECT_EQ(c.status, 1) << c.out;
  EXPECT_NE(c.out.find("slowdown_temp_C          89.0         89.0  yes"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("shutdown_temp_C          95.0         97.0  NO"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("1 field(s) differ"), std::string::npos) << c.out;
}

TEST(NvidiaSmiCompare, OlderDriversAbsoluteLinesStillCount) {
  TempDir dir;
  test::write_text(dir.path / "limit_show.json", kLimitShow);
  test::write_text(dir.path / "nvidia-smi.txt",
                   smi_580("        GPU Shutdown Temp                 : 95 C\n"
                           "        GPU Slowdown Temp                 : 89 C\n"));
  Compared c = compare(dir);
  EXPECT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("shutdown_temp_C          95.0         95.0  yes"), std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("all compared fields match\n"), std::string::npos) << c.out;
}

}  // namespace
}  // namespace regime
