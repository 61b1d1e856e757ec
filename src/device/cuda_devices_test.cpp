#include "device/cuda_devices.hpp"

#include <gtest/gtest.h>

namespace regime {
namespace {

GpuInfo gpu(int index, const std::string& bus, const std::string& name = "NVIDIA H200") {
  GpuInfo g;
  g.index = index;
  g.device = "nvml:" + std::to_string(index);
  g.name = name;
  g.uuid = "GPU-" + std::to_string(index) + "aaa-" + bus.substr(9, 2);
  g.pci_bus_id = bus;
  return g;
}

// NVML numbers these 0..3, but their PCI order is 2, 0, 3, 1.
std::vector<GpuInfo> node() {
  return {gpu(0, "00000000:19:00.0"), gpu(1, "00000000:DB:00.0"), gpu(2, "00000000:04:00.0"),
          gpu(3, "00000000:9A:00.0")};
}

using Ix = std::vector<int>;

TEST(CudaDevices, UnsetSeesEveryGpuInPciOrder) {
  CudaDeviceMap m = map_cuda_visible_devices(std::nullopt, std::nullopt, node());
  EXPECT_EQ(m.nvml_indices, (Ix{2, 0, 3, 1}));
  EXPECT_TRUE(m.exact);  // one model: fastest-first is PCI order
  EXPECT_TRUE(m.warnings.empty());
}

TEST(CudaDevices, IndicesCountInCudaOrderNotNvmls) {
  CudaDeviceMap m = map_cuda_visible_devices("2,0", "PCI_BUS_ID", node());
  EXPECT_EQ(m.nvml_indices, (Ix{3, 2}));  // cuda 2 is the third on the bus, cuda 0 the first
  EXPECT_TRUE(m.exact);
}

TEST(CudaDevices, WhenNvmlOrderIsPciOrderIndicesAgree) {
  std::vector<GpuInfo> in_order = {gpu(0, "00000000:04:00.0"), gpu(1, "00000000:19:00.0"),
                                   gpu(2, "00000000:9A:00.0")};
  EXPECT_EQ(map_cuda_visible_devices("2,0", std::nullopt, in_order).nvml_indices, (Ix{2, 0}));
}

TEST(CudaDevices, UuidsAndTheirUniquePrefixes) {
  auto gpus = node();
  CudaDeviceMap m = map_cuda_visible_devices(gpus[1].uuid + ",GPU-3", std::nullopt, gpus);
  EXPECT_EQ(m.nvml_indices, (Ix{1, 3}));
  EXPECT_TRUE(m.exact);
}

TEST(CudaDevices, ParsingStopsAtTheFirstEntryThatNamesNoGpu) {
  CudaDeviceMap m = map_cuda_visible_devices("1,7,0", std::nullopt, node());
  EXPECT_EQ(m.nvml_indices, (Ix{0}));  // cuda 1 is NVML 0; 7 does not exist, so 0 is ignored
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("'7'"), std::string::npos);
  EXPECT_TRUE(map_cuda_visible_devices("", std::nullopt, node()).nvml_indices.empty());
  EXPECT_TRUE(map_cuda_visible_devices("-1", std::nullopt, node()).nvml_indices.empty());
}

TEST(CudaDevices, AGpuNamedTwiceLeavesNone) {
  CudaDeviceMap m = map_cuda_visible_devices("0,0", std::nullopt, node());
  EXPECT_TRUE(m.nvml_indices.empty());
  EXPECT_FALSE(m.warnings.empty());
}

TEST(CudaDevices, MixedModelsUnderFastestFirstAreAGuessThatSaysSo) {
  std::vector<GpuInfo> mixed = {gpu(0, "00000000:04:00.0", "NVIDIA T4"),
                                gpu(1, "00000000:19:00.0", "NVIDIA L4")};
  CudaDeviceMap guess = map_cuda_visible_devices("0", std::nullopt, mixed);
  EXPECT_FALSE(guess.exact);
  ASSERT_FALSE(guess.warnings.empty());
  EXPECT_NE(guess.warnings[0].find("CUDA_DEVICE_ORDER=PCI_BUS_ID"), std::string::npos);
  EXPECT_TRUE(map_cuda_visible_devices("0", "PCI_BUS_ID", mixed).exact);
  // By UUID the order does not matter.
  EXPECT_TRUE(map_cuda_visible_devices(mixed[1].uuid, std::nullopt, mixed).exact);
}

TEST(CudaDevices, WithoutPciIdsNvmlOrderIsAssumedAndFlagged) {
  auto gpus = node();
  for (auto& g : gpus) g.pci_bus_id.clear();
  CudaDeviceMap m = map_cuda_visible_devices("2,0", std::nullopt, gpus);
  EXPECT_EQ(m.nvml_indices, (Ix{2, 0}));
  EXPECT_FALSE(m.exact);
}

}  // namespace
}  // namespace regime
