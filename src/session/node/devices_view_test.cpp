// The device and limit presenters: the text and the JSON of one listing or change show the same
// limits.
#include "session/node/devices_view.hpp"

#include <gtest/gtest.h>

#include "cli/device_options.hpp"
#include "support/gpu_info.hpp"

namespace regime::session {
namespace {

GpuInfo h200() {
  GpuInfo g = testing::gpu_with_limits("nvml:0", 200, 700, 600);
  g.name = "NVIDIA H200";
  g.uuid = "GPU-0";
  return g;
}

TEST(DevicesView, AListingShowsTheSameGpusAndModelsInBoth) {
  DeviceListing nvml{"nvml", true, "", {h200()}, {}};
  DeviceListing sim{"sim", true, "", {}, {"h200", "t4"}};
  const std::vector<DeviceListing> listings{nvml, sim};
  const nlohmann::json j = to_json(listings);
  const std::string text = to_text(listings);
  EXPECT_EQ(j["backends"][0]["gpus"][0]["enforced_limit_W"], 600);
  EXPECT_EQ(j["backends"][0]["gpus"][0]["min_limit_W"], 200);
  EXPECT_NE(text.find("  nvml:0     NVIDIA H200                  200.0     700.0     700.0     "
                      "600.0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(j["backends"][1]["models"], (nlohmann::json{"h200", "t4"}));
  EXPECT_NE(text.find("sim: models sim:h200 sim:t4\n"), std::string::npos) << text;
}

TEST(DevicesView, ALimitChangeShowsTheSameWattsInBoth) {
  LimitChange c;
  c.before = h200();
  c.requested_W = 450;
  c.enforced_W = 450;
  c.kept = true;
  c.physical = true;
  c.journal = "/state/journal";
  const nlohmann::json j = limits_json(cli::parse_gpu_list("nvml:0"), std::vector<LimitChange>{c});
  const std::string text = to_text(std::vector<LimitChange>{c});
  EXPECT_EQ(j["old_limit_W"], 600);
  EXPECT_EQ(j["requested_limit_W"], 450);
  EXPECT_EQ(j["kept"], true);
  EXPECT_EQ(text.rfind("nvml:0: power limit 600 W -> requested 450 W, enforced 450 W\n", 0), 0u)
      << text;
  EXPECT_NE(text.find("kept; the original 600 W is in /state/journal"), std::string::npos) << text;
}

TEST(DevicesView, ARestoreNamesWhereItsTargetCameFromInBoth) {
  LimitRestore r{h200(), 700, true, 700};
  EXPECT_EQ(limits_json(cli::parse_gpu_list("nvml:0"), std::vector<LimitRestore>{r})["restored_to"],
            "journal");
  EXPECT_EQ(to_text(std::vector<LimitRestore>{r}),
            "nvml:0: power limit 600 W -> 700 W (journaled original), enforced 700 W\n");
}

}  // namespace
}  // namespace regime::session
