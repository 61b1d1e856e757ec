#include "cli/open_for_workload.hpp"

#include "common/error.hpp"
#include "device/registry.hpp"

namespace regime::cli {

GpuPtr open_for_workload(const std::string& device, bool has_command) {
  GpuPtr gpu = open_device(device);
  if (has_command && gpu->simulated_clock() != nullptr)
    throw Error(ErrorKind::InvalidArgument,
                "device " + device +
                    " is simulated: it runs simulated workloads (--workload sim:NAME); a command "
                    "needs a real GPU such as nvml:0");
  return gpu;
}

}  // namespace regime::cli
