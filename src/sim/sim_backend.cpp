#include "sim/sim_backend.hpp"

#include "twin/spec.hpp"

namespace regime::sim {

std::unique_ptr<SimGpu> open_sim_gpu(const DeviceUri& uri) {
  twin::GpuSpec spec = twin::load_gpu_spec(uri.target);
  SimOptions options = parse_sim_options(uri, spec);
  return std::make_unique<SimGpu>(std::move(spec), options, uri.text, 0);
}

std::unique_ptr<SimGpu> open_sim_gpu(const std::string& uri) {
  return open_sim_gpu(parse_device_uri(uri));
}

Backend backend() {
  Backend b;
  b.scheme = "sim";
  b.open = [](const DeviceUri& uri) {
    std::vector<GpuPtr> out;
    out.push_back(open_sim_gpu(uri));
    return out;
  };
  b.list = [] {
    DeviceListing l;
    l.backend = "sim";
    l.available = true;
    l.note = "simulated GPUs: sim:MODEL[,ambient_C=C,cooling=X,seed=N,noise=F]";
    l.models = twin::gpu_models();
    return l;
  };
  return b;
}

}  // namespace regime::sim
