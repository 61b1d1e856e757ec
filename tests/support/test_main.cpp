// The tests' main: the device backends the program registers in src/cli/main.cpp, then GoogleTest.
#include <gtest/gtest.h>

#include "device/nvml/nvml_gpu.hpp"
#include "device/registry.hpp"
#include "sim/sim_backend.hpp"

int main(int argc, char** argv) {
  regime::register_backend(regime::nvml::backend());
  regime::register_backend(regime::sim::backend());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
