#include "device/device_list.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime {
namespace {

using List = std::vector<std::string>;

// The devices' texts, as given.
List texts(const std::string& list) {
  List out;
  for (const DeviceUri& d : parse_device_list(list)) out.push_back(d.text);
  return out;
}

TEST(DeviceList, OneDeviceStaysOne) {
  EXPECT_EQ(texts("nvml:0"), List{"nvml:0"});
  EXPECT_EQ(texts("nvml:all"), List{"nvml:all"});
  EXPECT_EQ(texts("sim:t4,ambient_C=35,cooling=1.5"), List{"sim:t4,ambient_C=35,cooling=1.5"});
  EXPECT_EQ(texts("replay:/tmp/a,b.csv"), List{"replay:/tmp/a,b.csv"});
}

TEST(DeviceList, NvmlIndicesAfterTheFirst) {
  EXPECT_EQ(texts("nvml:2,0"), (List{"nvml:2", "nvml:0"}));
  EXPECT_EQ(texts("nvml:0,nvml:3"), (List{"nvml:0", "nvml:3"}));
}

TEST(DeviceList, SimDevicesWithTheirParameters) {
  EXPECT_EQ(texts("sim:t4,sim:gv100,sim:l4"), (List{"sim:t4", "sim:gv100", "sim:l4"}));
  EXPECT_EQ(texts("sim:t4,ambient_C=35,sim:l4,cooling=2"),
            (List{"sim:t4,ambient_C=35", "sim:l4,cooling=2"}));
}

// Each device parsed once: its scheme, target and parameters are there without parsing it again.
TEST(DeviceList, EachDeviceParsed) {
  const std::vector<DeviceUri> d = parse_device_list("sim:t4,ambient_C=35,sim:l4");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].scheme, "sim");
  EXPECT_EQ(d[0].target, "t4");
  EXPECT_EQ(d[0].params.at("ambient_C"), "35");
  EXPECT_EQ(d[1].target, "l4");
  EXPECT_TRUE(d[1].params.empty());
  const std::vector<DeviceUri> n = parse_device_list("nvml:2,0");
  EXPECT_EQ(n[0].index(), 2);
  EXPECT_EQ(n[1].index(), 0);
  EXPECT_EQ(nvml_device(3).text, parse_device_uri("nvml:3").text);
  EXPECT_EQ(nvml_device(3).index(), 3);
}

TEST(DeviceList, RefusesWhatNamesNothingOrTwice) {
  for (const char* bad : {"", "nvml:0,", ",nvml:0", "ambient_C=3,sim:t4", "sim:t4,1", "nvml:0,x",
                          "nvml:0,0", "nvml:all,nvml:1", "nvml:0,sim:t4,bogus:1"}) {
    EXPECT_THROW(parse_device_list(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace regime
