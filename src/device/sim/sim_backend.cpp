// Registers the sim: device backend and the built-in sim:NAME workloads.
#include <memory>

#include "common/error.hpp"
#include "device/registry.hpp"
#include "device/sim/sim_gpu.hpp"
#include "device/sim/sim_workload.hpp"
#include "run/workload.hpp"
#include "twin/spec.hpp"

namespace regime::sim {

namespace {

std::vector<GpuPtr> open_sim(const DeviceUri& uri) {
  twin::GpuSpec spec = twin::load_gpu_spec(uri.target);
  SimOptions options = parse_sim_options(uri, spec);
  std::vector<GpuPtr> out;
  out.push_back(std::make_unique<SimGpu>(std::move(spec), options, uri.text, 0));
  return out;
}

DeviceListing list_sim() {
  DeviceListing l;
  l.backend = "sim";
  l.available = true;
  l.note = "simulated GPUs: sim:MODEL[,ambient_C=C,cooling=X,seed=N,noise=F]";
  l.models = twin::gpu_models();
  return l;
}

const bool registered = [] {
  register_backend({"sim", open_sim, list_sim});
  register_workload_scheme("sim", make_sim_workload);
  return true;
}();

}  // namespace
}  // namespace regime::sim
