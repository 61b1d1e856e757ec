#include "monitor/monitor_devices.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <optional>

#include "common/error.hpp"
#include "device/cuda_devices.hpp"
#include "device/nvml/nvml_gpu.hpp"
#include "device/registry.hpp"
#include "run/wall_clock.hpp"
#include "sim/sim_backend.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::monitor {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

void register_once(const std::string& scheme, Backend (*make)()) {
  for (const Backend& b : registered_backends())
    if (b.scheme == scheme) return;
  register_backend(make());
}

int parse_cuda_index(const std::string& uri) {
  const std::string digits = uri.substr(5);
  const bool ok = !digits.empty() && digits.size() <= 4 &&
                  digits.find_first_not_of("0123456789") == std::string::npos;
  if (!ok)
    throw Error(ErrorKind::InvalidArgument,
                "device '" + uri + "': cuda:N takes CUDA's index of a GPU (0, 1, ...)");
  return std::stoi(digits);
}

// A simulated GPU advanced to the wall clock before each read, its times shifted to Unix
// seconds, so the monitor's run loop on the wall clock samples it as a real one. It runs the
// built-in workload from the start; its own steps are dropped (the caller marks its own).
class WallClockSim final : public Gpu {
 public:
  explicit WallClockSim(std::unique_ptr<sim::SimGpu> gpu)
      : gpu_(std::move(gpu)), origin_s_(clock_.unix_now_s()) {
    const twin::SimWorkloadProfile profile = twin::sim_workload_profile(kSimMonitorWorkload);
    gpu_->start_workload(twin::workload_on(profile, gpu_->spec()), 0);
  }
  GpuInfo info() override { return gpu_->info(); }
  Sample read() override {
    catch_up();
    Sample s = gpu_->read();
    s.t_s += origin_s_;
    return s;
  }
  std::optional<double> read_energy_J() override {
    catch_up();
    return gpu_->read_energy_J();
  }
  std::vector<PowerPoint> drain_power_points() override {
    catch_up();
    std::vector<PowerPoint> points = gpu_->drain_power_points();
    for (PowerPoint& p : points) p.t_s += origin_s_;
    return points;
  }
  std::optional<ReasonTimes> read_reason_times() override {
    catch_up();
    return gpu_->read_reason_times();
  }
  double set_power_limit(double) override {
    throw Error(ErrorKind::NotSupported, "the monitor is read-only: it sets no power limit");
  }
  bool is_physical() const override { return false; }

 private:
  void catch_up() {
    gpu_->advance_to(clock_.unix_now_s() - origin_s_);
    gpu_->take_steps();  // kept by nobody: dropped so they do not pile up
  }
  std::unique_ptr<sim::SimGpu> gpu_;
  WallClock clock_;
  double origin_s_;
};

}  // namespace

std::vector<std::string> cuda_device_uris() {
  register_once("nvml", &nvml::backend);
  std::vector<GpuInfo> gpus;
  for (const Backend& b : registered_backends())
    if (b.scheme == "nvml") {
      DeviceListing listing = b.list();
      if (!listing.available)
        throw Error(ErrorKind::NotSupported, "NVML is not available: " + listing.note);
      gpus = std::move(listing.gpus);
    }
  const CudaDeviceMap map =
      map_cuda_visible_devices(env("CUDA_VISIBLE_DEVICES"), env("CUDA_DEVICE_ORDER"), gpus);
  std::vector<std::string> out;
  for (int k : map.nvml_indices) out.push_back("nvml:" + std::to_string(k));
  return out;
}

std::string cuda_device_uri(int cuda_index) {
  const std::vector<std::string> uris = cuda_device_uris();
  if (cuda_index < 0 || static_cast<size_t>(cuda_index) >= uris.size())
    throw Error(
        ErrorKind::NotFound,
        fmt::format("cuda:{}: this process sees {} GPU(s) (CUDA_VISIBLE_DEVICES={})", cuda_index,
                    uris.size(), env("CUDA_VISIBLE_DEVICES").value_or("unset")));
  return uris[static_cast<size_t>(cuda_index)];
}

GpuPtr open_monitor_device(const std::string& uri) {
  if (uri.rfind("cuda:", 0) == 0) return open_device(cuda_device_uri(parse_cuda_index(uri)));
  if (uri.rfind("sim:", 0) == 0) return std::make_unique<WallClockSim>(sim::open_sim_gpu(uri));
  register_once("nvml", &nvml::backend);
  return open_device(uri);
}

}  // namespace regime::monitor
