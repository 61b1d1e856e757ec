#include "device/uri.hpp"

#include <gmock/gmock.h>
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

TEST(DeviceUri, AGpuByUuidOrPciBusIdAsNvidiaSmiTakesIt) {
  DeviceUri u = parse_device_uri("nvml:GPU-5e2f0c1a-1111-2222-3333-444455556666");
  EXPECT_EQ(u.uuid(), "GPU-5e2f0c1a-1111-2222-3333-444455556666");
  EXPECT_FALSE(u.index());
  const PciAddress want{0, 0x3b, 0, 0};
  for (const char* text : {"nvml:0000:3b:00.0", "nvml:00000000:3B:00.0", "nvml:3b:00.0"}) {
    DeviceUri p = parse_device_uri(text);
    EXPECT_EQ(p.pci_address(), want) << text;
    EXPECT_FALSE(p.uuid()) << text;
  }
  EXPECT_EQ(parse_pci_address("0001:af:1f.7"), (PciAddress{1, 0xaf, 0x1f, 7}));
  for (const char* bad : {"3b:00", "3b:00.8", "3b:20.0", "g3:00.0", "123:00.0", ":00.0"})
    EXPECT_FALSE(parse_pci_address(bad)) << bad;
  try {
    parse_device_uri("nvml:3b:00");
    ADD_FAILURE() << "accepted a bus id without a function";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("is not a PCI bus id"));
  }
}

TEST(DeviceUri, NonNumericParamIsAnError) {
  auto u = parse_device_uri("sim:t4,ambient_C=hot");
  EXPECT_THROW(u.param_or("ambient_C", 0), Error);
}

}  // namespace
}  // namespace regime
