#include "device/uri.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime {
namespace {

TEST(DeviceUri, ParsesNvmlIndexAndAll) {
  auto u = parse_device_uri("nvml:3");
  EXPECT_EQ(u.scheme, "nvml");
  EXPECT_EQ(u.index(), 3);
  EXPECT_FALSE(u.all());
  auto a = parse_device_uri("nvml:all");
  EXPECT_TRUE(a.all());
  EXPECT_FALSE(a.index().has_value());
}

TEST(DeviceUri, ParsesSimParams) {
  auto u = parse_device_uri("sim:t4,ambient_C=35,cooling=1.5");
  EXPECT_EQ(u.scheme, "sim");
  EXPECT_EQ(u.target, "t4");
  EXPECT_DOUBLE_EQ(u.param_or("ambient_C", 0), 35);
  EXPECT_DOUBLE_EQ(u.param_or("cooling", 1), 1.5);
  EXPECT_DOUBLE_EQ(u.param_or("seed", 7), 7);
}

TEST(DeviceUri, ReplayKeepsWholePath) {
  auto u = parse_device_uri("replay:/tmp/a,b.csv");
  EXPECT_EQ(u.target, "/tmp/a,b.csv");
}

TEST(DeviceUri, RejectsMalformed) {
  for (const char* bad : {"", "nvml", "nvml:", "nvml:x", "nvml:-1", "foo:1", "sim:t4,ambient",
                          "nvml:0,a=b", "sim:,a=1"}) {
    try {
      parse_device_uri(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("expected nvml:N"), std::string::npos) << e.what();
    }
  }
}

TEST(DeviceUri, NonNumericParamIsAnError) {
  auto u = parse_device_uri("sim:t4,ambient_C=hot");
  EXPECT_THROW(u.param_or("ambient_C", 0), Error);
}

}  // namespace
}  // namespace regime
