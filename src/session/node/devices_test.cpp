#include <gtest/gtest.h>

#include "cli/device_options.hpp"
#include "session/node/devices_view.hpp"

namespace regime::session {
namespace {

TEST(LimitDevices, OneGpuNamedAloneIsOneAndAListOrAllIsNot) {
  EXPECT_TRUE(names_one_gpu(cli::parse_gpu_list("nvml:0")));
  EXPECT_TRUE(names_one_gpu(cli::parse_gpu_list("sim:h200")));
  EXPECT_TRUE(
      names_one_gpu(cli::parse_gpu_list("sim:t4,ambient_C=35")));  // one GPU with its parameters
  EXPECT_FALSE(names_one_gpu(cli::parse_gpu_list("nvml:0,1")));
  EXPECT_FALSE(names_one_gpu(cli::parse_gpu_list("sim:t4,sim:l4")));
  EXPECT_FALSE(names_one_gpu(cli::parse_gpu_list("nvml:all")));
}

TEST(LimitDevices, ACapKeptOnASimulatedGpuNamesNoJournal) {
  const std::vector<LimitChange> changes =
      set_limits(one_device(parse_device_uri("sim:h200")), 500, false, -1, nullptr);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].kept);
  EXPECT_FALSE(changes[0].physical);
  EXPECT_TRUE(changes[0].journal.empty());
  EXPECT_NEAR(changes[0].enforced_W, 500, 1e-9);
}

TEST(LimitDevices, TheJsonIsOneObjectForOneGpuNamedAloneElseAList) {
  LimitChange kept;
  kept.before.device = "sim:h200";
  kept.before.current_limit_W = 700;
  kept.requested_W = 500;
  kept.enforced_W = 500;
  kept.kept = true;
  const nlohmann::json one =
      limits_json(cli::parse_gpu_list("sim:h200"), std::vector<LimitChange>{kept});
  ASSERT_TRUE(one.is_object());
  EXPECT_EQ(one["old_limit_W"], 700.0);
  EXPECT_EQ(one["requested_limit_W"], 500.0);
  EXPECT_EQ(one["kept"], true);
  EXPECT_FALSE(one.contains("restored_limit_W"));

  LimitChange held = kept;
  held.restored_W = 700;
  const nlohmann::json list =
      limits_json(cli::parse_gpu_list("nvml:all"), std::vector<LimitChange>{held});
  ASSERT_TRUE(list.is_array());
  EXPECT_EQ(list[0]["restored_limit_W"], 700.0);
  EXPECT_FALSE(list[0].contains("kept"));

  LimitRestore back;
  back.before.device = "nvml:1";
  back.from_journal = false;
  const nlohmann::json two =
      limits_json(cli::parse_gpu_list("nvml:0,1"), std::vector<LimitRestore>{back, back});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1]["restored_to"], "default");
}

}  // namespace
}  // namespace regime::session
