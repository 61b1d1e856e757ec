#include "report/restore.hpp"

#include <gtest/gtest.h>

#include "report/page.hpp"

namespace regime::report {
namespace {

TEST(ReportRestore, SaysWhichLimitWasPutBackOnWhichGpuAndWhen) {
  const auto j = limit_restore_section(
      LimitRestored{"NVIDIA H200 (GPU-fake-h200-0)", 700, "2026-12-02T04:30:00Z"}, {700, 400, 700},
      "ignored");
  EXPECT_EQ(j["restored"], true);
  EXPECT_EQ(j["limit_W"], 700.0);
  EXPECT_EQ(j["text"],
            "Restored: the original power limit 700 W on NVIDIA H200 (GPU-fake-h200-0) at "
            "2026-12-02T04:30:00Z.");
}

TEST(ReportRestore, OneLimitThroughoutIsNothingChanged) {
  const auto j = limit_restore_section(std::nullopt, {700, 700, 700}, "NVIDIA H200 (GPU-x)");
  EXPECT_EQ(j["changed"], false);
  EXPECT_EQ(j["restored"], false);
  EXPECT_EQ(j["text"],
            "Nothing to restore: the power limit of NVIDIA H200 (GPU-x) stayed at 700 W "
            "throughout; no limit was changed.");
}

TEST(ReportRestore, AChangeWithoutAnAccountIsSaidAndPointsToRestore) {
  const auto j = limit_restore_section(std::nullopt, {700, 500, 650}, "nvml:0");
  EXPECT_EQ(j["changed"], true);
  EXPECT_TRUE(j["restored"].is_null());
  EXPECT_NE(j["text"].get<std::string>().find("500 to 700 W, 700 W at the start"),
            std::string::npos);
  EXPECT_NE(j["text"].get<std::string>().find("regime restore"), std::string::npos);
}

TEST(ReportRestore, NoRecordedLimitSaysSo) {
  const auto j = limit_restore_section(std::nullopt, {}, "sim:t4");
  EXPECT_TRUE(j["changed"].is_null());
  EXPECT_NE(j["text"].get<std::string>().find("recorded no power limit of sim:t4"),
            std::string::npos);
}

TEST(ReportRestore, ThePageOfAProbeSaysNothingWasChanged) {
  RunRecord r;
  r.id = 1;
  r.device = "nvml:0";
  r.gpu_name = "NVIDIA H200";
  r.gpu_uuid = "GPU-a";
  r.workload = "w";
  r.status = "done";
  r.report = {{"regime", "headroom"}, {"measurement", {{"gpu", 0}}}};
  Trace t;
  for (int i = 0; i < 5; ++i) {
    Sample s;
    s.t_s = i;
    s.power_W = 600;
    s.limit_W = 700;
    t.samples.push_back(s);
  }
  const auto page = build_page_data(r, t, {r}, {});
  EXPECT_EQ(page["restore"]["changed"], false);
  EXPECT_EQ(page["restore"]["gpu"], "NVIDIA H200 (GPU-a)");
}

}  // namespace
}  // namespace regime::report
