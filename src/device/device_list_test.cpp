#include "device/device_list.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime {
namespace {

using List = std::vector<std::string>;

TEST(DeviceList, OneDeviceStaysOne) {
  EXPECT_EQ(split_device_list("nvml:0"), List{"nvml:0"});
  EXPECT_EQ(split_device_list("nvml:all"), List{"nvml:all"});
  EXPECT_EQ(split_device_list("sim:t4,ambient_C=35,cooling=1.5"),
            List{"sim:t4,ambient_C=35,cooling=1.5"});
  EXPECT_EQ(split_device_list("replay:/tmp/a,b.csv"), List{"replay:/tmp/a,b.csv"});
}

TEST(DeviceList, NvmlIndicesAfterTheFirst) {
  EXPECT_EQ(split_device_list("nvml:2,0"), (List{"nvml:2", "nvml:0"}));
  EXPECT_EQ(split_device_list("nvml:0,nvml:3"), (List{"nvml:0", "nvml:3"}));
}

TEST(DeviceList, SimDevicesWithTheirParameters) {
  EXPECT_EQ(split_device_list("sim:t4,sim:gv100,sim:l4"), (List{"sim:t4", "sim:gv100", "sim:l4"}));
  EXPECT_EQ(split_device_list("sim:t4,ambient_C=35,sim:l4,cooling=2"),
            (List{"sim:t4,ambient_C=35", "sim:l4,cooling=2"}));
}

TEST(DeviceList, RefusesWhatNamesNothingOrTwice) {
  for (const char* bad : {"", "nvml:0,", ",nvml:0", "ambient_C=3,sim:t4", "sim:t4,1", "nvml:0,x",
                          "nvml:0,0", "nvml:all,nvml:1", "nvml:0,sim:t4,bogus:1"}) {
    EXPECT_THROW(split_device_list(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace regime
