#include "session/site/backends.hpp"

#include "device/nvml/nvml_gpu.hpp"
#include "device/registry.hpp"
#include "sim/sim_backend.hpp"

namespace regime::session {

void register_backends() {
  register_backend(nvml::backend());
  register_backend(sim::backend());
}

}  // namespace regime::session
